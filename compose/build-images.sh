#!/usr/bin/env bash
# Builds the two images compose/docker-compose.yml needs, without any image registry:
#   kafka-chaos/kafka:4.1.0       Apache Kafka from a distribution you give (KAFKA_DIST), on Debian + Java 17,
#                                 with the apache/kafka contract (KAFKA_* variables, KRaft formatted on first start)
#   kafka-chaos/toxiproxy:2.12.0  a toxiproxy-server (and toxiproxy-cli) binary you give (TOXIPROXY_BIN)
# Then `export KAFKA_CHAOS_IMAGES=kafka-chaos` makes the compose file use them; unset, it pulls
# apache/kafka:4.1.0 and ghcr.io/shopify/toxiproxy:2.12.0 as before.
#
# On a Debian machine as root it also installs the engine and docker-compose (v1) from Debian's packages when
# missing, and starts dockerd when no engine answers. Note: dockerd sets the host's iptables FORWARD policy to
# DROP and turns on IP forwarding; the compose file publishes ports on 127.0.0.1 only.
#
#   KAFKA_DIST=/path/to/kafka_2.13-4.1.0 TOXIPROXY_BIN=/path/to/bin compose/build-images.sh
# Images that exist already are kept (FORCE=1 rebuilds). Exit 2: bad input; exit 3: the engine or a build failed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
KAFKA_DIST="${KAFKA_DIST:-}"
TOXIPROXY_BIN="${TOXIPROXY_BIN:-}"
FORCE="${FORCE:-0}"
BASE=kafka-chaos/debian:bookworm JAVA=kafka-chaos/java:17 KAFKA=kafka-chaos/kafka:4.1.0 TOXI=kafka-chaos/toxiproxy:2.12.0

say() { echo "build-images: $*"; }
fail() { echo "build-images: $2" >&2; exit "$1"; }

[ -n "$KAFKA_DIST" ] || fail 2 "KAFKA_DIST is not set: give the folder of an Apache Kafka distribution (kafka_2.13-4.1.0)"
[ -x "$KAFKA_DIST/bin/kafka-server-start.sh" ] || fail 2 "KAFKA_DIST=$KAFKA_DIST: no bin/kafka-server-start.sh there"
[ -n "$TOXIPROXY_BIN" ] || fail 2 "TOXIPROXY_BIN is not set: give the folder holding toxiproxy-server and toxiproxy-cli"
for b in toxiproxy-server toxiproxy-cli; do
  [ -x "$TOXIPROXY_BIN/$b" ] || fail 2 "TOXIPROXY_BIN=$TOXIPROXY_BIN: no executable $b there"
done

apt_install() {
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || fail 3 "$1 is missing and this is not a Debian machine as root: install it"
  say "installing $* from Debian's packages"
  local log; log="$(mktemp)"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@") >"$log" 2>&1 \
    || { tail -20 "$log" >&2; rm -f "$log"; fail 3 "apt-get install $* failed"; }
  rm -f "$log"
}

# The engine: the docker CLI, docker-compose (v1, what Debian ships) unless `docker compose` (v2) works.
command -v dockerd >/dev/null || apt_install docker.io
docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null || apt_install docker-compose
if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || fail 3 "no Docker engine answers and this is not root: start dockerd"
  say "no engine answers: starting dockerd (log: /var/log/kafka-chaos-dockerd.log)"
  nohup dockerd >/var/log/kafka-chaos-dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || fail 3 "dockerd did not answer within 60s: see /var/log/kafka-chaos-dockerd.log"
fi

build() {  # quiet unless it fails (the legacy builder's deprecation notice is noise here)
  docker build -t "$1" "$2" >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; fail 3 "building $1 failed"; }
}
have() { [ "$FORCE" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if ! have "$BASE"; then
  command -v debootstrap >/dev/null || apt_install debootstrap
  say "$BASE: debootstrap --variant=minbase bookworm (about a minute)"
  debootstrap --variant=minbase bookworm "$work/rootfs" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; fail 3 "debootstrap failed"; }
  tar -C "$work/rootfs" -c . | docker import - "$BASE" >/dev/null || fail 3 "docker import of the base failed"
  rm -rf "$work/rootfs"
fi

if ! have "$JAVA"; then
  say "$JAVA: Java 17 from Debian's packages"
  mkdir -p "$work/java"
  cat >"$work/java/Dockerfile" <<EOF
FROM $BASE
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      openjdk-17-jre-headless >/dev/null && rm -rf /var/lib/apt/lists/*
EOF
  build "$JAVA" "$work/java"
fi

if ! have "$KAFKA"; then
  say "$KAFKA: Kafka from $KAFKA_DIST"
  mkdir -p "$work/kafka"
  cp -a "$KAFKA_DIST" "$work/kafka/kafka"
  rm -rf "$work/kafka/kafka/logs"
  cp "$here/kafka-entrypoint.sh" "$work/kafka/"
  cat >"$work/kafka/Dockerfile" <<EOF
FROM $JAVA
COPY kafka /opt/kafka
COPY kafka-entrypoint.sh /etc/kafka/docker/run
ENV PATH=/opt/kafka/bin:\$PATH
EXPOSE 9092
ENTRYPOINT ["/etc/kafka/docker/run"]
EOF
  build "$KAFKA" "$work/kafka"
fi

if ! have "$TOXI"; then
  say "$TOXI: toxiproxy from $TOXIPROXY_BIN"
  mkdir -p "$work/toxi"
  cp "$TOXIPROXY_BIN/toxiproxy-server" "$TOXIPROXY_BIN/toxiproxy-cli" "$work/toxi/"
  cat >"$work/toxi/Dockerfile" <<EOF
FROM $BASE
COPY toxiproxy-server /toxiproxy
COPY toxiproxy-cli /toxiproxy-cli
EXPOSE 8474
ENTRYPOINT ["/toxiproxy"]
CMD ["-host=0.0.0.0"]
EOF
  build "$TOXI" "$work/toxi"
fi

say "ready: $KAFKA, $TOXI. Use them with: export KAFKA_CHAOS_IMAGES=kafka-chaos"
