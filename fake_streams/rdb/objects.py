"""``rdbSaveObjectType`` + ``rdbSaveObject`` and ``rdbLoadObjectType`` + ``rdbLoadObject`` for every type.

Writing picks the encoding the server would hold for this content under the CONFIG in
:class:`~.values.Encodings` (the server converts one way only, so a value that once grew past a limit
and shrank back is a hashtable there and compact here; the contents are the same either way):

* string: ``RDB_TYPE_STRING`` (integer / LZF / verbatim, :meth:`~.rdbio.Writer.string`);
* list: ``RDB_TYPE_LIST_QUICKLIST_2``; nodes as RPUSH of one element at a time builds them
  (``list-max-listpack-size``; 7.2+ starts as one listpack and turns it into the first quicklist node);
* set: ``RDB_TYPE_SET_INTSET`` (integers only, ``set-max-intset-entries``), ``RDB_TYPE_SET_LISTPACK``
  (7.2+, ``set-max-listpack-*``), else ``RDB_TYPE_SET``;
* zset: ``RDB_TYPE_ZSET_LISTPACK`` (``zset-max-listpack-*``; ordered by score then member; scores
  that are integers as integers, others as the server's text: ``%.17g`` on 7.0, ``fpconv_dtoa`` on 7.2+),
  else ``RDB_TYPE_ZSET_2`` (greatest first, binary doubles);
* hash: ``RDB_TYPE_HASH_LISTPACK`` (``hash-max-listpack-*``, insertion order) else ``RDB_TYPE_HASH``; with
  field TTLs (7.4: ``hash_ttls``) ``RDB_TYPE_HASH_LISTPACK_EX`` (the next expiry, then ``field value ttl``
  triples: fields with a TTL soonest first, then the others) or ``RDB_TYPE_HASH_METADATA`` (the next
  expiry, then ``ttl`` relative to it + 1 (0: none) before each field and value);
* stream: :mod:`.streams`.

Reading accepts every object type the profile's server loads, including the older ones (linked list,
ziplist and quicklist-of-ziplists lists, zipmap / ziplist hashes, ziplist zsets, text-double zsets,
the first stream format), checks each container, and refuses empty values and duplicates.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..ids import parse_i64
from . import intset, listpack, streams, ziplist
from .errors import PayloadFormatError
from .fpconv import fpconv_dtoa
from .rdbio import Reader, Writer
from .values import Encodings, Value

TYPE_STRING, TYPE_LIST, TYPE_SET, TYPE_ZSET, TYPE_HASH, TYPE_ZSET_2 = 0, 1, 2, 3, 4, 5
TYPE_HASH_ZIPMAP, TYPE_LIST_ZIPLIST, TYPE_SET_INTSET, TYPE_ZSET_ZIPLIST, TYPE_HASH_ZIPLIST = 9, 10, 11, 12, 13
TYPE_LIST_QUICKLIST, TYPE_HASH_LISTPACK, TYPE_ZSET_LISTPACK, TYPE_LIST_QUICKLIST_2 = 14, 16, 17, 18
TYPE_SET_LISTPACK = 20
TYPE_HASH_METADATA_PRE_GA, TYPE_HASH_LISTPACK_EX_PRE_GA, TYPE_HASH_METADATA, TYPE_HASH_LISTPACK_EX = 22, 23, 24, 25
#: a listpack-ex field without a TTL (``HASH_LP_NO_TTL``)
_NO_TTL = 0
CONTAINER_PLAIN, CONTAINER_PACKED = 1, 2

#: quicklist.c optimization_level: node byte limits for list-max-listpack-size -1 .. -5
_LEVELS = (4096, 8192, 16384, 32768, 65536)
_SIZE_SAFETY_LIMIT = 8192
_SIZE_ESTIMATE_OVERHEAD = 8
_PACKED_THRESHOLD = 1 << 30
_LLONG_HALF = float((1 << 63) // 2)


# ------------------------------------------------------------------------------------------ writing
def _size_limit(fill: int) -> Optional[int]:
    """``quicklistNodeLimit``'s byte limit for a negative fill (None for a count fill)."""
    if fill >= 0:
        return None
    return _LEVELS[min(-fill - 1, len(_LEVELS) - 1)]


def _exceeds(fill: int, new_sz: int, new_count: int) -> bool:
    """``quicklistNodeExceedsLimit`` (7.2+)."""
    limit = _size_limit(fill)
    if limit is not None:
        return new_sz > limit
    if new_sz > _SIZE_SAFETY_LIMIT:
        return True
    return new_count > (fill or 1)


def _large(size: int, fill: int, modern: bool) -> bool:
    """``isLargeElement``: such an element gets a PLAIN node of its own."""
    if not modern:
        return size >= _PACKED_THRESHOLD
    limit = _size_limit(fill)
    return size > _SIZE_SAFETY_LIMIT if limit is None else size > limit


def _allow_insert(fill: int, node_sz: int, node_count: int, size: int, modern: bool) -> bool:
    """``_quicklistNodeAllowInsert`` of 7.2+ (``modern``) or 7.0."""
    new_sz = node_sz + size + _SIZE_ESTIMATE_OVERHEAD
    if modern:
        return not _exceeds(fill, new_sz, node_count + 1)
    limit = _size_limit(fill)
    if limit is not None and new_sz <= limit:
        return True
    if new_sz > _SIZE_SAFETY_LIMIT:
        return False
    return node_count < fill


def quicklist_nodes(items: Sequence[bytes], fill: int, modern: bool) -> List[Tuple[int, List[bytes]]]:
    """``[(container, elements), ...]`` as RPUSH of one element at a time builds them. O(n)."""
    nodes: List[Tuple[int, List[bytes]]] = []
    cur: Optional[List[bytes]] = None
    cur_sz = 0
    quick = not modern  # 7.2+ starts as a plain listpack (converted when it would exceed the limit)
    for item in items:
        size = len(item)
        element = len(listpack.encode_element(item))
        if not quick:
            lp_bytes = cur_sz if cur is not None else 7
            count = len(cur) if cur is not None else 0
            if _exceeds(fill, lp_bytes + size, count + 1):
                quick = True  # the listpack becomes the first node (if not empty)
            else:
                if cur is None:
                    cur, cur_sz = [], 7
                    nodes.append((CONTAINER_PACKED, cur))
                cur.append(item)
                cur_sz += element
                continue
        if _large(size, fill, modern):
            nodes.append((CONTAINER_PLAIN, [item]))
            cur = None
            continue
        if cur is None or not _allow_insert(fill, cur_sz, len(cur), size, modern):
            cur, cur_sz = [], 7
            nodes.append((CONTAINER_PACKED, cur))
        cur.append(item)
        cur_sz += element
    return nodes


def _double2ll(score: float) -> Optional[int]:
    if score < -_LLONG_HALF or score > _LLONG_HALF or math.isnan(score):
        return None
    as_int = int(score)
    return as_int if as_int == score else None


def score_element(score: float, modern: bool) -> listpack.Element:
    """A zset listpack's score element (``zzlInsertAt``)."""
    as_int = _double2ll(score)
    if as_int is not None:
        return as_int
    if math.isinf(score):
        return b"inf" if score > 0 else b"-inf"
    return fpconv_dtoa(score) if modern else (b"%.17g" % score)


def _listpack_set_order(members: List[bytes], ints: List[Optional[int]]) -> List[bytes]:
    """A listpack set's element order from the members' insertion order: a set whose first members were
    integers began as an intset, and turned into a listpack when the first string came, keeping the intset's
    ascending order (``setTypeConvert``); later members are appended. O(n log n)."""
    first_str = next((i for i, v in enumerate(ints) if v is None), len(members))
    if first_str < 2:
        return members
    head = sorted(range(first_str), key=lambda i: ints[i] or 0)  # every one of them is an integer
    return [members[i] for i in head] + members[first_str:]


def _all_short(items: Sequence[bytes], limit: int) -> bool:
    return all(len(x) <= limit for x in items)


# ------------------------------------------------------------- encodings (also OBJECT ENCODING's answer)
def set_encoding(members: Sequence[bytes], enc: Encodings, modern: bool) -> str:
    """``"intset"``, ``"listpack"`` (``modern``: 7.2+) or ``"hashtable"``: how the server keeps a set of these
    ``members`` at these limits (decided by the content: see the README's known differences). O(n)."""
    if len(members) <= enc.set_max_intset_entries and all(len(m) <= 20 and parse_i64(m) is not None for m in members):
        return "intset"
    if modern and len(members) <= enc.set_max_listpack_entries and _all_short(members, enc.set_max_listpack_value):
        return "listpack"
    return "hashtable"


def zset_encoding(members: Sequence[bytes], enc: Encodings) -> str:
    """``"listpack"`` or ``"skiplist"`` for a sorted set of these ``members``. O(n)."""
    if len(members) <= enc.zset_max_listpack_entries and _all_short(members, enc.zset_max_listpack_value):
        return "listpack"
    return "skiplist"


def hash_encoding(pairs: Sequence[Tuple[bytes, bytes]], enc: Encodings) -> str:
    """``"listpack"`` or ``"hashtable"`` for a hash of these field/value ``pairs``. O(n)."""
    limit = enc.hash_max_listpack_value
    if len(pairs) <= enc.hash_max_listpack_entries and all(len(f) <= limit and len(v) <= limit for f, v in pairs):
        return "listpack"
    return "hashtable"


def _encode_hash(w: Writer, pairs: List[Tuple[bytes, bytes]], ttls: Dict[bytes, int], enc: Encodings) -> None:
    compact = hash_encoding(pairs, enc) == "listpack"
    if not ttls:
        if compact:
            w.byte(TYPE_HASH_LISTPACK)
            w.string(listpack.encode([x for pair in pairs for x in pair]))
        else:
            w.byte(TYPE_HASH)
            w.length(len(pairs))
            for f, v in pairs:
                w.string(f)
                w.string(v)
        return
    min_expire = min(ttls.values())
    if compact:
        w.byte(TYPE_HASH_LISTPACK_EX)
        w.ms_time(min_expire)
        volatile = sorted((p for p in pairs if p[0] in ttls), key=lambda p: ttls[p[0]])
        items: List[listpack.Element] = []
        for f, v in volatile + [p for p in pairs if p[0] not in ttls]:
            items += [f, v, ttls.get(f, _NO_TTL)]
        w.string(listpack.encode(items))
        return
    w.byte(TYPE_HASH_METADATA)
    w.ms_time(min_expire)
    w.length(len(pairs))
    for f, v in pairs:
        w.length(ttls[f] - min_expire + 1 if f in ttls else 0)
        w.string(f)
        w.string(v)


def encode(value: Value, enc: Encodings, modern: bool, stream_type: int, hash_ttls: bool = False) -> bytes:
    """Type byte + ``rdbSaveObject`` body of ``value``. ``modern``: the 7.2+ encodings / number text;
    ``hash_ttls``: the server keeps hash field TTLs (7.4), else they are not written."""
    w = Writer(enc.rdbcompression)
    kind, data = value.kind, value.data
    if kind == "string":
        w.byte(TYPE_STRING)
        w.string(data)
    elif kind == "list":
        w.byte(TYPE_LIST_QUICKLIST_2)
        nodes = quicklist_nodes(data, enc.list_max_listpack_size, modern)
        w.length(len(nodes))
        for container, node in nodes:
            w.length(container)
            w.string(node[0] if container == CONTAINER_PLAIN else listpack.encode(node))
    elif kind == "set":
        members: List[bytes] = list(data)
        ints = [parse_i64(m) if len(m) <= 20 else None for m in members]
        encoding = set_encoding(members, enc, modern)
        if encoding == "intset":
            w.byte(TYPE_SET_INTSET)
            w.string(intset.encode([i for i in ints if i is not None]))
        elif encoding == "listpack":
            w.byte(TYPE_SET_LISTPACK)
            w.string(listpack.encode(_listpack_set_order(members, ints)))
        else:
            w.byte(TYPE_SET)
            w.length(len(members))
            for m in members:
                w.string(m)
    elif kind == "zset":
        pairs = sorted(data, key=lambda p: (p[1], p[0]))
        if zset_encoding([m for m, _ in pairs], enc) == "listpack":
            w.byte(TYPE_ZSET_LISTPACK)
            items: List[listpack.Element] = []
            for member, score in pairs:
                items.append(member)
                items.append(score_element(score, modern))
            w.string(listpack.encode(items))
        else:
            w.byte(TYPE_ZSET_2)
            w.length(len(pairs))
            for member, score in reversed(pairs):
                w.string(member)
                w.binary_double(score)
    elif kind == "hash":
        _encode_hash(w, list(data), value.field_ttls if hash_ttls else {}, enc)
    elif kind == "stream":
        w.byte(stream_type)
        streams.encode(w, data, stream_type)
    else:
        raise ValueError(f"no RDB encoding for {kind!r}")
    return w.getvalue()


# ------------------------------------------------------------------------------------------ reading
def _nonempty(items: List[Any], what: str) -> List[Any]:
    if not items:
        raise PayloadFormatError(f"empty {what}")
    return items


def _distinct(items: List[bytes], what: str) -> List[bytes]:
    if len(set(items)) != len(items):
        raise PayloadFormatError(f"duplicate {what}")
    return items


def _pairs(flat: List[bytes], what: str) -> List[Tuple[bytes, bytes]]:
    if len(flat) % 2:
        raise PayloadFormatError(f"odd {what}")
    pairs = list(zip(flat[0::2], flat[1::2]))
    _distinct([p[0] for p in pairs], what)
    return _nonempty(pairs, what)


def _score(item: listpack.Element) -> float:
    if type(item) is int:
        return float(item)
    try:
        score = float(bytes(item).decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise PayloadFormatError("zset score") from None
    if math.isnan(score):
        raise PayloadFormatError("zset NaN score")
    return score


def _zset_flat(flat: List[listpack.Element]) -> List[Tuple[bytes, float]]:
    if len(flat) % 2:
        raise PayloadFormatError("odd zset listpack")
    pairs = [(listpack.as_bytes(m), _score(s)) for m, s in zip(flat[0::2], flat[1::2])]
    _distinct([m for m, _ in pairs], "zset member")
    return _nonempty(pairs, "zset")


def _strings(items: List[listpack.Element]) -> List[bytes]:
    return [listpack.as_bytes(x) for x in items]


def _read_list(r: Reader, rdbtype: int) -> List[bytes]:
    out: List[bytes] = []
    if rdbtype == TYPE_LIST:
        for _ in range(r.length()):
            out.append(r.string())
    elif rdbtype == TYPE_LIST_ZIPLIST:
        out = _strings(ziplist.decode(r.string()))
    elif rdbtype == TYPE_LIST_QUICKLIST:
        for _ in range(r.length()):
            out += _strings(ziplist.decode(r.string()))
    else:  # QUICKLIST_2
        for _ in range(r.length()):
            container = r.length()
            if container == CONTAINER_PLAIN:
                out.append(r.string())
            elif container == CONTAINER_PACKED:
                out += _strings(listpack.decode(r.string()))
            else:
                raise PayloadFormatError("quicklist node container")
    return _nonempty(out, "list")


def _read_set(r: Reader, rdbtype: int) -> List[bytes]:
    if rdbtype == TYPE_SET:
        members = [r.string() for _ in range(r.length())]
    elif rdbtype == TYPE_SET_INTSET:
        members = [b"%d" % v for v in intset.decode(r.string())]
    else:
        members = _strings(listpack.decode(r.string()))
    return _nonempty(_distinct(members, "set member"), "set")


def _read_zset(r: Reader, rdbtype: int) -> List[Tuple[bytes, float]]:
    if rdbtype in (TYPE_ZSET, TYPE_ZSET_2):
        pairs: List[Tuple[bytes, float]] = []
        for _ in range(r.length()):
            member = r.string()
            score = r.binary_double() if rdbtype == TYPE_ZSET_2 else r.text_double()
            if math.isnan(score):
                raise PayloadFormatError("zset NaN score")
            pairs.append((member, score))
        _distinct([m for m, _ in pairs], "zset member")
        return _nonempty(pairs, "zset")
    blob = r.string()
    return _zset_flat(ziplist.decode(blob) if rdbtype == TYPE_ZSET_ZIPLIST else listpack.decode(blob))


def _read_hash_ttls(r: Reader, rdbtype: int) -> Tuple[List[Tuple[bytes, bytes]], Dict[bytes, int]]:
    """The hash-field-expiration types (7.4): ``(pairs, field_ttls)``."""
    ttls: Dict[bytes, int] = {}
    pairs: List[Tuple[bytes, bytes]] = []
    if rdbtype in (TYPE_HASH_LISTPACK_EX, TYPE_HASH_LISTPACK_EX_PRE_GA):
        if rdbtype == TYPE_HASH_LISTPACK_EX:
            r.ms_time()  # the next expiry (kept for a future use by the server)
        items = listpack.decode(r.string())
        if len(items) % 3:
            raise PayloadFormatError("hash listpack-ex is not made of triples")
        for f, v, ttl in zip(items[0::3], items[1::3], items[2::3]):
            if type(ttl) is not int or ttl < 0:
                raise PayloadFormatError("hash listpack-ex TTL")
            pairs.append((listpack.as_bytes(f), listpack.as_bytes(v)))
            if ttl != _NO_TTL:
                ttls[pairs[-1][0]] = ttl
    else:
        min_expire = r.ms_time() if rdbtype == TYPE_HASH_METADATA else 0
        for _ in range(r.length()):
            ttl = r.length()
            f, v = r.string(), r.string()
            pairs.append((f, v))
            if ttl:
                ttls[f] = ttl + min_expire - 1 if rdbtype == TYPE_HASH_METADATA else ttl
    _distinct([f for f, _ in pairs], "hash field")
    if any(not 0 < t < 1 << 48 for t in ttls.values()):  # EB_EXPIRE_TIME_MAX
        raise PayloadFormatError("hash field TTL out of range")
    return _nonempty(pairs, "hash"), ttls


def _read_hash(r: Reader, rdbtype: int) -> List[Tuple[bytes, bytes]]:
    if rdbtype == TYPE_HASH:
        flat: List[bytes] = []
        for _ in range(r.length()):
            flat.append(r.string())
            flat.append(r.string())
        return _pairs(flat, "hash field")
    blob = r.string()
    if rdbtype == TYPE_HASH_ZIPMAP:
        pairs = ziplist.decode_zipmap(blob)
        _distinct([f for f, _ in pairs], "hash field")
        return _nonempty(pairs, "hash")
    items = ziplist.decode(blob) if rdbtype == TYPE_HASH_ZIPLIST else listpack.decode(blob)
    return _pairs(_strings(items), "hash field")


_READERS: Dict[int, Tuple[str, Callable[[Reader, int], Any]]] = {
    TYPE_STRING: ("string", lambda r, t: r.string()),
    TYPE_LIST: ("list", _read_list),
    TYPE_LIST_ZIPLIST: ("list", _read_list),
    TYPE_LIST_QUICKLIST: ("list", _read_list),
    TYPE_LIST_QUICKLIST_2: ("list", _read_list),
    TYPE_SET: ("set", _read_set),
    TYPE_SET_INTSET: ("set", _read_set),
    TYPE_SET_LISTPACK: ("set", _read_set),
    TYPE_ZSET: ("zset", _read_zset),
    TYPE_ZSET_2: ("zset", _read_zset),
    TYPE_ZSET_ZIPLIST: ("zset", _read_zset),
    TYPE_ZSET_LISTPACK: ("zset", _read_zset),
    TYPE_HASH: ("hash", _read_hash),
    TYPE_HASH_ZIPMAP: ("hash", _read_hash),
    TYPE_HASH_ZIPLIST: ("hash", _read_hash),
    TYPE_HASH_LISTPACK: ("hash", _read_hash),
    TYPE_HASH_METADATA_PRE_GA: ("hash", _read_hash_ttls),
    TYPE_HASH_LISTPACK_EX_PRE_GA: ("hash", _read_hash_ttls),
    TYPE_HASH_METADATA: ("hash", _read_hash_ttls),
    TYPE_HASH_LISTPACK_EX: ("hash", _read_hash_ttls),
    streams.TYPE_STREAM_LISTPACKS: ("stream", streams.decode),
    streams.TYPE_STREAM_LISTPACKS_2: ("stream", streams.decode),
    streams.TYPE_STREAM_LISTPACKS_3: ("stream", streams.decode),
    streams.TYPE_STREAM_LISTPACKS_4: ("stream", streams.decode),
    streams.TYPE_STREAM_LISTPACKS_5: ("stream", streams.decode),
}


def decode(body: bytes, max_type: int) -> Value:
    """The value in ``body`` (type byte + object; what follows is not read). ``max_type``: the
    highest RDB_TYPE_* the server knows (``rdbIsObjectType``). Raises PayloadFormatError."""
    r = Reader(body)
    rdbtype = r.byte()
    entry = _READERS.get(rdbtype) if rdbtype <= max_type else None
    if entry is None:
        raise PayloadFormatError(f"object type {rdbtype} not loadable")
    kind, read = entry
    if read is _read_hash_ttls:
        pairs, ttls = read(r, rdbtype)
        return Value(kind, pairs, ttls)
    return Value(kind, read(r, rdbtype))
