"""The CONFIG parameters of each server version: data only (read by :mod:`fake_streams.config`).

One row per parameter, ``name|alias|kind|flags|default|spec``:

* kind — ``bool`` (yes/no), ``enum`` (spec: the values), ``int`` / ``mem`` (spec: ``lo..hi``; ``mem`` takes
  1k / 1kb / 1m / 1mb / 1g / 1gb), ``str`` (any text), or a special parameter with its own syntax
  (``save``, ``obuf``, ``oom``, ``events``, ``bind``, ``replicaof``, ``percentiles``, ``dir``, ``rdma``);
* flags — ``I`` immutable, ``P`` protected (``enable-protected-configs`` is ``no``), ``H`` hidden (CONFIG GET
  by its exact name only), ``S`` sensitive, ``%`` also a percentage (``10%``), ``8`` octal, ``u`` unsigned,
  ``M`` an enum of several values;
* default — the value CONFIG GET shows on a server started without a config file (``port`` 6379; ``dir``
  empty here: the working directory of the process).

Sources: Redis 7.0.15 and Valkey 9.1.2 as the live servers report them (``CONFIG GET *`` and the errors of
CONFIG SET), the kinds, bounds and flags read from each version's ``src/config.c`` (Redis 7.0.15, 7.2.6, 7.4.1,
Valkey 8.0.1; not the ``LOG_REQ_RES`` test-build ones); Valkey 9.1's own parameters from the live server. Each version below is its parent's table with
the rows it adds or changes and the names it drops."""

from __future__ import annotations

from typing import Dict, Optional, Tuple

#: version -> (parent version or None, rows added or changed, names removed)
TABLES: Dict[str, Tuple[Optional[str], str, Tuple[str, ...]]] = {
    "7.0": (None, """\
acl-pubsub-default||enum||resetchannels|allchannels,resetchannels
aclfile||str|I||
acllog-max-len||int|u|128|0..9223372036854775807
active-defrag-cycle-max||int||25|1..99
active-defrag-cycle-min||int||1|1..99
active-defrag-ignore-bytes||mem|u|104857600|1..9223372036854775807
active-defrag-max-scan-fields||int|u|1000|1..9223372036854775807
active-defrag-threshold-lower||int||10|0..1000
active-defrag-threshold-upper||int||100|0..1000
active-expire-effort||int||1|1..10
activedefrag||bool||no|
activerehashing||bool||yes|
always-show-logo||bool|I|no|
aof-disable-auto-gc||bool||no|
aof-load-truncated||bool||yes|
aof-rewrite-incremental-fsync||bool||yes|
aof-timestamp-enabled||bool||no|
aof-use-rdb-preamble||bool||yes|
aof_rewrite_cpulist||str|I||
appenddirname||str|I|appendonlydir|
appendfilename||str|I|appendonly.aof|
appendfsync||enum||everysec|everysec,always,no
appendonly||bool||no|
auto-aof-rewrite-min-size||mem||67108864|0..9223372036854775807
auto-aof-rewrite-percentage||int||100|0..2147483647
bgsave_cpulist||str|I||
bind-source-addr||str|||
bind||bind||* -::*|
bio_cpulist||str|I||
busy-reply-threshold|lua-time-limit|int||5000|0..9223372036854775807
client-output-buffer-limit||obuf||normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60|
client-query-buffer-limit||mem|u|1073741824|1048576..9223372036854775807
cluster-allow-pubsubshard-when-down||bool||yes|
cluster-allow-reads-when-down||bool||no|
cluster-allow-replica-migration||bool||yes|
cluster-announce-bus-port||int||0|0..65535
cluster-announce-hostname||str|||
cluster-announce-ip||str|||
cluster-announce-port||int||0|0..65535
cluster-announce-tls-port||int||0|0..65535
cluster-config-file||str|I|nodes.conf|
cluster-enabled||bool|I|no|
cluster-link-sendbuf-limit||mem|u|0|0..18446744073709551615
cluster-migration-barrier||int||1|0..2147483647
cluster-node-timeout||int||15000|0..9223372036854775807
cluster-port||int|I|0|0..65535
cluster-preferred-endpoint-type||enum||ip|ip,hostname,unknown-endpoint
cluster-replica-no-failover|cluster-slave-no-failover|bool||no|
cluster-replica-validity-factor|cluster-slave-validity-factor|int||10|0..2147483647
cluster-require-full-coverage||bool||yes|
crash-log-enabled||bool||yes|
crash-memcheck-enabled||bool||yes|
daemonize||bool|I|no|
databases||int|I|16|1..2147483647
dbfilename||str|P|dump.rdb|
dir||dir|P||
disable-thp||bool|I|yes|
dynamic-hz||bool||yes|
enable-debug-command||enum|I|no|no,yes,local
enable-module-command||enum|I|no|no,yes,local
enable-protected-configs||enum|I|no|no,yes,local
hash-max-listpack-entries|hash-max-ziplist-entries|int|u|512|0..9223372036854775807
hash-max-listpack-value|hash-max-ziplist-value|mem|u|64|0..9223372036854775807
hll-sparse-max-bytes||mem|u|3000|0..9223372036854775807
hz||int||10|0..2147483647
ignore-warnings||str|||
io-threads-do-reads||bool|I|no|
io-threads||int|I|1|1..128
jemalloc-bg-thread||bool||yes|
key-load-delay||int|H|0|-2147483648..2147483647
latency-monitor-threshold||int||0|0..9223372036854775807
latency-tracking-info-percentiles||percentiles||50 99 99.9|
latency-tracking||bool||yes|
lazyfree-lazy-eviction||bool||no|
lazyfree-lazy-expire||bool||no|
lazyfree-lazy-server-del||bool||no|
lazyfree-lazy-user-del||bool||no|
lazyfree-lazy-user-flush||bool||no|
lfu-decay-time||int||1|0..2147483647
lfu-log-factor||int||10|0..2147483647
list-compress-depth||int||0|0..2147483647
list-max-listpack-size|list-max-ziplist-size|int||-2|-2147483648..2147483647
loading-process-events-interval-bytes||int|H|2097152|1024..2147483647
logfile||str|I||
loglevel||enum||notice|debug,verbose,notice,warning
masterauth||str|S||
masteruser||str|S||
maxclients||int|u|10000|1..4294967295
maxmemory-clients||mem|%|0|-100..9223372036854775807
maxmemory-eviction-tenacity||int||10|0..100
maxmemory-policy||enum||noeviction|volatile-lru,volatile-lfu,volatile-random,volatile-ttl,allkeys-lru,allkeys-lfu,allkeys-random,noeviction
maxmemory-samples||int||5|1..2147483647
maxmemory||mem|u|0|0..18446744073709551615
min-replicas-max-lag|min-slaves-max-lag|int||10|0..2147483647
min-replicas-to-write|min-slaves-to-write|int||0|0..2147483647
no-appendfsync-on-rewrite||bool||no|
notify-keyspace-events||events|||
oom-score-adj-values||oom||0 200 800|
oom-score-adj||enum||no|no,yes,relative,absolute
pidfile||str|I||
port||int||6379|0..65535
proc-title-template||str||{title} {listen-addr} {server-mode}|
propagation-error-behavior||enum||ignore|ignore,panic,panic-on-replicas
protected-mode||bool||yes|
proto-max-bulk-len||mem||536870912|1048576..9223372036854775807
rdb-del-sync-files||bool||no|
rdb-key-save-delay||int|H|0|-2147483648..2147483647
rdb-save-incremental-fsync||bool||yes|
rdbchecksum||bool|I|yes|
rdbcompression||bool||yes|
repl-backlog-size||mem||1048576|1..9223372036854775807
repl-backlog-ttl||int||3600|0..9223372036854775807
repl-disable-tcp-nodelay||bool||no|
repl-diskless-load||enum||disabled|disabled,on-empty-db,swapdb
repl-diskless-sync-delay||int||5|0..2147483647
repl-diskless-sync-max-replicas||int||0|0..2147483647
repl-diskless-sync||bool||yes|
repl-ping-replica-period|repl-ping-slave-period|int||10|1..2147483647
repl-timeout||int||60|1..2147483647
replica-announce-ip|slave-announce-ip|str|||
replica-announce-port|slave-announce-port|int||0|0..65535
replica-announced||bool||yes|
replica-ignore-disk-write-errors||bool||no|
replica-ignore-maxmemory|slave-ignore-maxmemory|bool||yes|
replica-lazy-flush|slave-lazy-flush|bool||no|
replica-priority|slave-priority|int||100|0..2147483647
replica-read-only|slave-read-only|bool||yes|
replica-serve-stale-data|slave-serve-stale-data|bool||yes|
replicaof|slaveof|replicaof|I||
requirepass||str|S||
sanitize-dump-payload||enum||no|no,yes,clients
save||save||3600 1 300 100 60 10000|
server_cpulist||str|I||
set-max-intset-entries||int|u|512|0..9223372036854775807
set-proc-title||bool|I|yes|
shutdown-on-sigint||enum|M|default|default,save,nosave,now,force
shutdown-on-sigterm||enum|M|default|default,save,nosave,now,force
shutdown-timeout||int||10|0..2147483647
slowlog-log-slower-than||int||10000|-1..9223372036854775807
slowlog-max-len||int|u|128|0..9223372036854775807
socket-mark-id||int|Iu|0|0..4294967295
stop-writes-on-bgsave-error||bool||yes|
stream-node-max-bytes||mem|u|4096|0..9223372036854775807
stream-node-max-entries||int||100|0..9223372036854775807
supervised||enum|I|no|upstart,systemd,auto,no
syslog-enabled||bool|I|no|
syslog-facility||enum|I|local0|user,local0,local1,local2,local3,local4,local5,local6,local7
syslog-ident||str|I|redis|
tcp-backlog||int|I|511|0..2147483647
tcp-keepalive||int||300|0..2147483647
timeout||int||0|0..2147483647
tls-auth-clients||enum||yes|no,yes,optional
tls-ca-cert-dir||str|||
tls-ca-cert-file||str|||
tls-cert-file||str|||
tls-ciphersuites||str|||
tls-ciphers||str|||
tls-client-cert-file||str|||
tls-client-key-file-pass||str|||
tls-client-key-file||str|||
tls-cluster||bool||no|
tls-dh-params-file||str|||
tls-key-file-pass||str|||
tls-key-file||str|||
tls-port||int||0|0..65535
tls-prefer-server-ciphers||bool||no|
tls-protocols||str|||
tls-replication||bool||no|
tls-session-cache-size||int||20480|0..2147483647
tls-session-cache-timeout||int||300|0..2147483647
tls-session-caching||bool||yes|
tracking-table-max-keys||int|u|1000000|0..9223372036854775807
unixsocketperm||int|I8u|0|0..511
unixsocket||str|I||
use-exit-on-panic||bool|H|no|
watchdog-period||int|H|0|0..2147483647
zset-max-listpack-entries|zset-max-ziplist-entries|int|u|128|0..9223372036854775807
zset-max-listpack-value|zset-max-ziplist-value|mem|u|64|0..9223372036854775807
""", ()),
    "7.2": ('7.0', """\
aof-disable-auto-gc||bool|H|no|
cluster-announce-human-nodename||str|||
cluster-ping-interval||int|H|0|0..9223372036854775807
locale-collate||str|||
loglevel||enum||notice|debug,verbose,notice,warning,nothing
set-max-listpack-entries||int|u|128|0..9223372036854775807
set-max-listpack-value||int|u|64|0..9223372036854775807
""", ()),
    "7.4": ('7.2', """\
aof-rewrite-cpulist|aof_rewrite_cpulist|str|I||
bgsave-cpulist|bgsave_cpulist|str|I||
bio-cpulist|bio_cpulist|str|I||
hide-user-data-from-log||bool||no|
max-new-connections-per-cycle||int|u|10|1..1000
max-new-tls-connections-per-cycle||int|u|1|1..1000
maxmemory-samples||int||5|1..64
server-cpulist|server_cpulist|str|I||
tls-client-key-file-pass||str|S||
tls-key-file-pass||str|S||
""", ('aof_rewrite_cpulist', 'bgsave_cpulist', 'bio_cpulist', 'server_cpulist')),
    # Redis 8.6: the defaults of a new stream's IDMP-DURATION / IDMP-MAXSIZE (addendum §2.9; XCFGSET's ranges, a
    # choice: docs/redis8-choices.md). The other 8.x additions to CONFIG are not emulated (7.4's rows).
    "8.6": ('7.4', """\
stream-idmp-duration||int||100|1..86400
stream-idmp-maxsize||int||100|1..10000
""", ()),
    "valkey-8.0": ('7.2', """\
aof-rewrite-cpulist|aof_rewrite_cpulist|str|I||
availability-zone||str|||
bgsave-cpulist|bgsave_cpulist|str|I||
bio-cpulist|bio_cpulist|str|I||
cluster-announce-client-ipv4||str|||
cluster-announce-client-ipv6||str|||
cluster-blacklist-ttl||int|u|60|0..18446744073709551615
cluster-slot-stats-enabled||bool||no|
debug-context||str|H||
dual-channel-replication-enabled||bool||no|
enable-debug-assert||bool|IH|no|
events-per-io-thread||int||2|0..2147483647
extended-redis-compatibility||bool||no|
hide-user-data-from-log||bool||yes|
io-threads-do-reads||bool|I|yes|
lazyfree-lazy-eviction||bool||yes|
lazyfree-lazy-expire||bool||yes|
lazyfree-lazy-server-del||bool||yes|
lazyfree-lazy-user-del||bool||yes|
lazyfree-lazy-user-flush||bool||yes|
max-new-connections-per-cycle||int|u|10|1..1000
max-new-tls-connections-per-cycle||int|u|1|1..1000
maxmemory-samples||int||5|1..64
prefetch-batch-max-size||int||16|0..128
primaryauth|masterauth|str|S||
primaryuser|masteruser|str|S||
repl-backlog-size||mem||10485760|1..9223372036854775807
replica-lazy-flush|slave-lazy-flush|bool||yes|
server-cpulist|server_cpulist|str|I||
syslog-ident||str|I|valkey|
tls-client-key-file-pass||str|S||
tls-key-file-pass||str|S||
unixsocketgroup||str|I||
""", ('aof_rewrite_cpulist', 'bgsave_cpulist', 'bio_cpulist', 'masterauth', 'masteruser', 'server_cpulist')),
    "valkey-9.1": ('valkey-8.0', """\
io-threads||int||1|1..256
repl-diskless-load||enum||disabled|disabled,on-empty-db,swapdb,flush-before-load
shutdown-on-sigint||enum|M|default|default,save,nosave,now,force,safe,failover
shutdown-on-sigterm||enum|M|default|default,save,nosave,now,force,safe,failover
active-defrag-cycle-us||int||500|0..100000
cluster-announce-client-port||int||0|0..65535
cluster-announce-client-tls-port||int||0|0..65535
cluster-config-save-behavior||enum||sync|sync,best-effort
cluster-databases||int|I|1|
cluster-manual-failover-timeout||int||5000|1..2147483647
cluster-slot-migration-log-max-len||int||1000|0..9223372036854775807
commandlog-execution-slower-than||int||10000|-1..9223372036854775807
commandlog-large-reply-max-len||int||128|0..9223372036854775807
commandlog-large-request-max-len||int||128|0..9223372036854775807
commandlog-reply-larger-than||int||1048576|-1..9223372036854775807
commandlog-request-larger-than||int||1048576|-1..9223372036854775807
commandlog-slow-execution-max-len||int||128|0..9223372036854775807
hash-seed||str|I||
import-mode||bool||no|
log-format||enum||legacy|legacy,logfmt,json
log-timestamp-format||enum||legacy|legacy,iso8601,milliseconds
mptcp||bool|I|no|
rdb-version-check||enum||strict|strict,relaxed
rdma-bind||rdma|||
rdma-completion-vector||int|I|-1|
rdma-port||int||0|0..65535
rdma-rx-size||int|I|1048576|
repl-mptcp||bool|I|no|
slot-migration-max-failover-repl-bytes||mem||0|-1..9223372036854775807
tls-auth-clients-user||enum||off|CN,URI,off
tls-auto-reload-interval||int||0|0..2147483647
""", ('dynamic-hz', 'events-per-io-thread', 'io-threads-do-reads', 'sanitize-dump-payload')),
}
