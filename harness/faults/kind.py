"""What a fault kind is, and what every kind shares: its settings' common fields (FaultBase, the targets), what a
cluster lets the harness do (Means), and the toxic helper of the kinds that act through a proxy.

A kind is one module under faults/kinds/ holding one FaultKind: its settings (a pydantic model, composed into
the experiment schema by spec.py), what it acts on and needs of a cluster (why a backend cannot run it), what
it holds while on (the schedule's overlap rules), how it is applied and healed (the nemesis calls these), its
colour and label in the report, and the ranges an exploration may draw its settings from. The registry
(faults/registry.py) lists the kinds. As Jepsen keeps a fault family together and Kafka's Trogdor makes each
fault one class over a start and a duration, nothing else in the harness names a kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Literal, Union, get_args

from pydantic import Field, ValidationInfo, model_validator

from ..schema import MAX_FAULTS_PER_SECOND, Seconds, Strict, stored


class BrokerTarget(Strict):
    broker: Annotated[int, Field(ge=0)]


class LeaderTarget(Strict):
    """The broker that leads this partition of the variant's topic when the fault starts."""

    leader_of: Annotated[int, Field(ge=0, alias="leader-of")]


class FollowerTarget(Strict):
    """An in-sync replica of this partition that is not its leader, when the fault starts."""

    follower_of: Annotated[int, Field(ge=0, alias="follower-of")]


Target = Union[Literal["all", "random"], BrokerTarget, LeaderTarget, FollowerTarget]
WORKLOAD_TARGET = "workload"  # the target of the faults that act on the workload, not on a broker


class FaultBase(Strict):
    at: Annotated[Seconds, Field(ge=0)] | None = Field(None, description="seconds after the variant's workload starts")
    every: Annotated[Seconds, Field(ge=1 / MAX_FAULTS_PER_SECOND)] | None = Field(
        None, description="repeat period in seconds")
    jitter: Annotated[Seconds, Field(ge=0)] = 0.0
    start: Annotated[Seconds, Field(ge=0)] = Field(0.5, description="with every: first fault not before this")
    duration: Annotated[Seconds, Field(gt=0)] = 0.3
    target: Target = "all"

    @model_validator(mode="after")
    def _timing(self):
        if (self.at is None) == (self.every is None):
            raise ValueError("give exactly one of 'at' (one fault) or 'every' (repeated faults)")
        if self.every is not None and self.jitter >= self.every:
            raise ValueError("jitter must be smaller than every")
        return self


class WorkloadFault(FaultBase):
    """A fault on the variant's workload (its producer or consumer group), not on a broker."""

    target: Literal["workload"] = WORKLOAD_TARGET


class Downtime(FaultBase):
    """A fault that stops a broker: it runs again `downtime` seconds later (its duration)."""

    downtime: Annotated[Seconds, Field(gt=0)] = 2.0

    @model_validator(mode="after")
    def _downtime_is_duration(self, info: ValidationInfo):
        # Run folders of earlier releases wrote the duration beside the downtime (the same number).
        if "duration" in self.model_fields_set and not (stored(info) and self.duration == self.downtime):
            raise ValueError(f"{self.kind} takes 'downtime' (seconds until the broker starts again), not 'duration'")
        self.duration = self.downtime
        return self


@dataclass(frozen=True)
class Means:
    """What a cluster lets the harness do, each None when it can, else why it cannot (said to the user as is).
    Each backend says what it has (cluster/: `means`); each kind says which of these it needs."""

    client_proxy: str | None = None  # the clients' traffic crosses proxies the harness controls
    request_framing: str | None = None  # those proxies read Kafka's request framing (the embedded proxy)
    peer_traffic: str | None = None  # the brokers' traffic with their peers and the quorum crosses proxies too
    broker_process: str | None = None  # the harness can pause, kill and start the brokers
    log_folders: str | None = None  # ... and owns their log folders on this machine
    plaintext_broker: str | None = None  # a client of the harness's own reaches the brokers it started, in plaintext
    packets: str | None = None  # each broker has a network link the harness made (network namespaces)
    packet_queue: str | None = None  # ... and a netfilter queue can hold its packets


MEANS = tuple(Means.__dataclass_fields__)

# (cluster, broker index, the fault's name, its settings, the variant's topic) -> None, the monotonic time it took
# effect, or a dict of what it did (journaled as the fault's "effect") with that time as "took_effect". A heal
# may return a dict of what it found, journaled with the fault's "effect" too.
Action = Callable[..., object]
ACTS_ON = ("client traffic", "peer traffic", "link", "broker", "client", "producer", "consumer")
HOLDS = ("broker", "member", "producer", "link queue")  # what a fault holds until it heals (the overlap rules)
OTHER_COLOR = "#bab0ac"  # the report's colour of a kind that has none of its own


@dataclass(frozen=True)
class FaultKind:
    schema: type[FaultBase]  # its settings; the `kind` literal is its name
    acts_on: str  # one of ACTS_ON
    apply: Action | None = None  # on each broker it targets (None: the workload applies it, `serve`)
    heal: Action | None = None
    serve: str | None = None  # a workload fault: what the workload is asked to do (faults/channel.py)
    needs: tuple[str, ...] = ()  # of Means, in the order the first one missing is said
    holds: str | None = None  # one of HOLDS
    stops_broker: bool = False  # the broker must start again: the overlap rule adds its start allowance
    loses_memory_log: bool = False  # on a broker with memory storage (Tansu), the log is gone afterwards
    check: Callable[[str, object, FaultBase | None], str] | None = None  # (name, experiment, fault or None) -> why not
    color: str = OTHER_COLOR
    explore: Mapping[str, tuple] = field(default_factory=dict)  # setting -> (low, high), or a tuple of choices

    def __post_init__(self):
        assert self.acts_on in ACTS_ON and self.holds in (None, *HOLDS) and set(self.needs) <= set(MEANS)
        assert (self.serve is None) == (self.apply is not None) == (self.acts_on not in ("producer", "consumer"))

    @property
    def name(self) -> str:
        return get_args(self.schema.model_fields["kind"].annotation)[0]

    @property
    def label(self) -> str:
        """How the report names it."""
        return self.name

    @property
    def on_workload(self) -> bool:
        return self.serve is not None

    def cannot(self, means: Means) -> str:
        """Why a cluster with these means cannot run it ("" when it can)."""
        return next((getattr(means, need) for need in self.needs if getattr(means, need)), "")

    def problem(self, experiment, fault: FaultBase | None = None) -> str:
        """Why this experiment cannot take it ("" when it can): the same check for the experiment's faults and
        a replayed schedule's (fault None)."""
        return self.check(self.name, experiment, fault) if self.check else ""


def toxic(type: str, attributes: Callable[[dict], dict], stream: str = "downstream") -> tuple[Action, Action]:
    """(apply, heal) of a Toxiproxy toxic on the broker's proxy; `stream` is upstream (requests) or downstream
    (responses), or for a fault with a `stream` setting, what it names."""
    def apply(cluster, broker, name, params, topic):
        on = {"requests": "upstream", "responses": "downstream"}.get(params.get("stream"), stream)
        cluster.toxiproxy().add_toxic(cluster.proxy_name(broker), name, type=type, stream=on,
                                      attributes=attributes(params))

    def heal(cluster, broker, name, params, topic):
        cluster.toxiproxy().remove_toxic(cluster.proxy_name(broker), name)

    return apply, heal


def link(action: str) -> tuple[Action, Action]:
    """(apply, heal) of a rule on the packets of the broker's network link, each way (cluster/netns.py names the
    actions: drop, duplicate, reorder, delay)."""
    return (lambda c, b, n, p, t: c.link_fault(b, n, action, p)), (lambda c, b, n, p, t: c.heal_link(b, n))


def producer_problem(kind: str, experiment, fault) -> str:
    """A fault on the producer needs the harness's own producer running on the fault timeline, or a child of
    another implementation (each restarts and pauses a plain, idempotent or transactional producer); not a child
    of another confluent-kafka version."""
    groups = [experiment.consumer_spec(v) for v in experiment.variants]
    if any(g is not None and g.when == "after" for g in groups):
        return f"{kind} acts on the producer, which runs before the fault timeline when consumer.when is after"
    for v in experiment.variants:
        library = experiment.client_library(v)
        if library is not None and experiment.implementation(v) is None:
            return (f"{kind} acts on the producer; variant {v.name} runs {' '.join(library)} in a child process, "
                    f"which takes no {kind} so far")
    return ""


def consumer_problem(kind: str, experiment, fault) -> str:
    """A fault on the consumer group needs a group in every variant."""
    groups = [experiment.consumer_spec(v) for v in experiment.variants]
    if not all(groups):
        return (f"{kind} acts on the consumer group, and variant {experiment.variants[groups.index(None)].name} "
                "has none: add a consumer section")
    return ""
