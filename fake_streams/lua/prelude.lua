-- The script environment as Redis builds it (script_lua.c / eval.c), run once per runtime by
-- fake_streams.lua.runtime. Receives a table of Python callbacks; every callback returns
-- (ok, value...) and never raises, the wrappers below turn a failure into the Lua error the
-- server's C function would raise. Chunk name "=[fake_streams]": the error handler skips these
-- frames when it looks for the user's line.
local py = ...
local error, type, tostring, tonumber, select, rawget, rawset, next, setmetatable, pcall, xpcall, unpack =
    error, type, tostring, tonumber, select, rawget, rawset, next, setmetatable, pcall, xpcall, unpack
local dsethook, dgetinfo = debug.sethook, debug.getinfo
local LIB = "=[fake_streams]"

-- readonly view of a table: reads go to the table, writes fail as on a readonly table (Redis 7 marks every
-- library table and the globals readonly; rawset and setmetatable refuse them too)
local protected = setmetatable({}, {__mode = "k"})
local function readonly(store, missing)
  local view = setmetatable({}, {
    __index = missing or store,
    __newindex = function() error("Attempt to modify a readonly table", 2) end,
    __metatable = false,
  })
  protected[view] = true
  return view
end
local function guard_readonly(fn)
  return function(t, ...)
    if protected[t] then error("Attempt to modify a readonly table", 0) end
    return fn(t, ...)
  end
end

local function err_table(message)
  return {err = message}
end

-- ------------------------------------------------------------------------------------- redis.*
-- Library functions are Python callables (called from Lua as C functions are, so a call in tail position keeps
-- the caller's frame for the error handler); a failure raises a Python LuaRaise, which reaches Lua as a
-- userdata error object: py.unwrap gives the value the server's C function would have raised.
local unwrap = py.unwrap
local redis = {}
for _, name in ipairs({"call", "pcall", "sha1hex", "status_reply", "error_reply", "log", "setresp", "set_repl",
                       "replicate_commands", "breakpoint", "debug", "acl_check_cmd"}) do
  redis[name] = py["redis_" .. name]
end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.REDIS_VERSION = py.version
redis.REDIS_VERSION_NUM = py.version_num

-- ------------------------------------------------------------------------------------ libraries
local cjson = {
  encode = py.cjson_encode,
  decode = py.cjson_decode,
  null = py.null,
}
local cmsgpack = {
  pack = py.msgpack_pack,
  unpack = py.msgpack_unpack,
  unpack_one = py.msgpack_unpack_one,
  unpack_limit = py.msgpack_unpack_limit,
  _NAME = "cmsgpack",
  _VERSION = "lua-cmsgpack 0.4.0",
  _COPYRIGHT = "Copyright (C) 2012, Salvatore Sanfilippo",
  _DESCRIPTION = "MessagePack C implementation for Lua",
}
local bit = {}
for _, op in ipairs({"tobit", "bnot", "band", "bor", "bxor", "lshift", "rshift", "arshift", "rol", "ror",
                     "bswap", "tohex"}) do
  bit[op] = py["bit_" .. op]
end
local struct = {pack = py.struct_pack, unpack = py.struct_unpack, size = py.struct_size}

-- math.random / randomseed: the server's own lrand48, the same sequence on every platform
local rmath = {}
for k, v in next, math do rmath[k] = v end
rmath.random = py.random
rmath.randomseed = py.randomseed

-- pcall as Redis 7 defines it: an error table with a string 'err' comes back as that string
local function pcall_result(ok, ...)
  if ok then return true, ... end
  local e = ...
  if type(e) == "userdata" then e = unwrap(e) end
  if type(e) == "table" then
    local message = e.err
    if type(message) == "string" or type(message) == "number" then e = message end
  end
  return false, e
end
local function redis_pcall(...)
  return pcall_result(pcall(...))
end

-- ------------------------------------------------------------------------------------- globals
-- __index of a protected globals table: the value in `tbl`, or the server's error naming the variable
local function missing_in(tbl, level)
  level = level or 2
  return function(_, key)
    local value = tbl[key]
    if value == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(key) .. "'", level)
    end
    return value
  end
end
local store = {}
local env = readonly(store, missing_in(store))
for _, name in ipairs({"xpcall", "tostring", "getfenv", "setmetatable", "next", "assert", "tonumber", "rawequal",
                       "collectgarbage", "getmetatable", "rawset", "coroutine", "type", "select", "unpack",
                       "gcinfo", "pairs", "rawget", "loadstring", "ipairs", "_VERSION", "setfenv", "load", "error",
                       "newproxy"}) do
  store[name] = _G[name]
end
store.pcall = redis_pcall
store.rawset = guard_readonly(rawset)
store.setmetatable = guard_readonly(setmetatable)
if py.server_alias then store.os = readonly({clock = os.clock}) end  -- Valkey keeps os.clock
-- a callback's failure reaches a user's message handler as the value the server raises
store.xpcall = function(fn, user_handler)
  return xpcall(fn, function(e)
    if type(e) == "userdata" then e = unwrap(e) end
    return user_handler(e)
  end)
end
-- chunks compiled by a script see the script's globals, not the interpreter's
local function sandboxed_loaders(target, globals)
  for name, compile in next, {loadstring = loadstring, load = load} do
    target[name] = function(chunk, chunkname)
      local fn, message = compile(chunk, chunkname)
      if fn then setfenv(fn, globals) end
      return fn, message
    end
  end
end
sandboxed_loaders(store, env)
store._G = env
store.string = readonly(string)
getmetatable("").__index = store.string  -- ("x"):upper() and getmetatable("").__index == string, as on the server
store.table = readonly(table)
store.math = readonly(rmath)
store.cjson = readonly(cjson)
store.cmsgpack = readonly(cmsgpack)
store.bit = readonly(bit)
store.struct = readonly(struct)
store.redis = readonly(redis)
if py.server_alias then store.server = store.redis end

-- the error handler (eval.c's __redis__err__handler): the user's frame gives source and line
local function handler(err)
  if type(err) == "userdata" then err = unwrap(err) end
  local level, info = 2, nil
  while true do
    info = dgetinfo(level, "nSl")
    if not info or (info.what ~= "C" and info.source ~= LIB) then break end
    level = level + 1
  end
  if type(err) ~= "table" then err = {err = "ERR " .. tostring(err)} end
  if info then
    err.source = info.source
    err.line = info.currentline
  end
  return err
end

-- every 100000 instructions: ask Python whether the script must stop (SCRIPT KILL, shutdown)
local killed
local function on_count()
  local message = py.interrupt()
  if message then
    killed = message
    -- from now on every line of the script raises again, so a pcall cannot swallow the kill
    dsethook(function()
      local info = dgetinfo(2, "S")
      if info and info.source ~= LIB then error(err_table(killed)) end
    end, "l")
    error(err_table(message))
  end
end

-- the functions engine (FUNCTION LOAD / FCALL): its own globals, no KEYS/ARGV, no debugger helpers; while a
-- library loads only the load API is visible (redis.register_function, redis.log, the versions)
local fstore = {}
for k, v in next, store do fstore[k] = v end
local fredis = {}
for k, v in next, redis do fredis[k] = v end
fredis.breakpoint, fredis.debug, fredis.replicate_commands = nil, nil, nil
fstore.redis = readonly(fredis)
if py.server_alias then fstore.server = fstore.redis end
local load_redis = {register_function = py.register_function, log = redis.log,
                    LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
                    REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM}
local load_store = {redis = readonly(load_redis, missing_in(load_redis))}
if py.server_alias then load_store.server = load_store.redis end
local loading = false
local from_fstore, from_load_store = missing_in(fstore, 3), missing_in(load_store, 3)
local fenv = readonly(fstore, function(t, key)
  local value  -- not tail calls: level 3 of the error is the code that read the global
  if loading then value = from_load_store(t, key) else value = from_fstore(t, key) end
  return value
end)
fstore._G = fenv
sandboxed_loaders(fstore, fenv)

local function clear_raw_globals()
  for k in next, env do rawset(env, k, nil) end
  for k in next, fenv do rawset(fenv, k, nil) end
end

local api = {}
-- compile a script body: the function, or nil and the compiler's message
function api.compile(body, chunkname)
  local fn, message = loadstring(body, chunkname)
  if not fn then return nil, message end
  setfenv(fn, env)
  return fn, nil
end
-- run fn(...) under the error handler and the interrupt hook: ok, result-or-error-table
function api.run(fn, keys, argv, hooked, ...)
  store.KEYS, store.ARGV = keys, argv
  killed = nil
  if hooked then dsethook(on_count, "", 100000) end
  local n = select("#", ...)
  local args = {...}
  local ok, result = xpcall(function() return fn(unpack(args, 1, n)) end, handler)
  dsethook()
  clear_raw_globals()
  store.KEYS, store.ARGV = nil, nil
  return ok, result
end
-- FUNCTION LOAD: compile the library (its shebang line already blanked) and run it with the load API
function api.load_library(body, hooked)
  local fn, message = loadstring(body, "@user_function")
  if not fn then return nil, message end
  setfenv(fn, fenv)
  loading = true
  killed = nil
  if hooked then dsethook(on_count, "", 100000) end
  local ok, result = xpcall(fn, handler)
  dsethook()
  loading = false
  clear_raw_globals()
  return ok, result
end
-- luaL_where(L, 1) of a library function that fails: the caller's "chunk:line: ", "" when the caller is C
-- (level 0 getinfo, 1 this function, 2 the Python callable, 3 its caller)
function api.where()
  local info = dgetinfo(3, "Sl")
  if info and info.currentline > 0 then return info.short_src .. ":" .. info.currentline .. ": " end
  return ""
end
function api.lua_type(v) return type(v) end
function api.new_table() return {} end

-- nothing outside the sandbox stays reachable through the interpreter's globals (getfenv of a builtin);
-- lupa itself needs 'debug' there (its traceback handler)
for _, name in ipairs({"python", "os", "io", "package", "require", "dofile", "loadfile", "module"}) do
  rawset(_G, name, nil)
end
return api
