#!/usr/bin/env bash
# The entrypoint of the locally built Kafka image, with apache/kafka's contract: every KAFKA_<NAME> variable
# becomes a broker setting (prefix dropped, lower case, '___' -> '-', '__' -> '_', '_' -> '.'), CLUSTER_ID names
# the cluster, and the KRaft storage is formatted on the first start only (a restarted container keeps its log).
set -euo pipefail
props=/opt/kafka/config/docker.properties
: >"$props"
for var in $(compgen -e | grep '^KAFKA_' || true); do
  case "$var" in  # the variables Kafka's own scripts read, not settings
    KAFKA_HEAP_OPTS|KAFKA_OPTS|KAFKA_LOG4J_OPTS|KAFKA_JMX_OPTS|KAFKA_JVM_PERFORMANCE_OPTS|KAFKA_GC_LOG_OPTS|\
    KAFKA_LOG4J_ROOT_LOGLEVEL|KAFKA_LOG4J_LOGGERS|KAFKA_TOOLS_LOG4J_LOGLEVEL|KAFKA_JMX_HOSTNAME|KAFKA_JMX_PORT|\
    KAFKA_HOME|KAFKA_LOG_DIR|KAFKA_VERSION|KAFKA_DEBUG) continue ;;
  esac
  key="${var#KAFKA_}"; key="${key,,}"
  key="${key//___/-}"; key="${key//__/@}"; key="${key//_/.}"; key="${key//@/_}"
  printf '%s=%s\n' "$key" "${!var}" >>"$props"
done
grep -q '^log\.dirs=' "$props" || echo "log.dirs=/tmp/kraft-combined-logs" >>"$props"  # apache/kafka's default
logdir="$(sed -n 's/^log\.dirs=//p' "$props" | cut -d, -f1)"
if [ ! -f "$logdir/meta.properties" ]; then
  : "${CLUSTER_ID:?CLUSTER_ID is needed to format the KRaft storage}"
  /opt/kafka/bin/kafka-storage.sh format --ignore-formatted -t "$CLUSTER_ID" -c "$props"
fi
exec /opt/kafka/bin/kafka-server-start.sh "$props"
