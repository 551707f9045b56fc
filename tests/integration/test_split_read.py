"""The final read split into offset ranges (several Spark tasks per topic partition) writes the same
records, a file per range in offset order, and the analysis finds exactly what it finds in the
one-file-per-partition layout. Own Tansu broker and proxy; a topic written with duplicates."""

import pyarrow.parquet as pq

from harness.engine.partitions import analyze_variant
from harness.engine.rowgroups import partitions_in
from harness.cluster.local import LocalTansuCluster
from harness.runfolder import parquet_files
from harness.spec import LocalClusterSpec
from harness.engine.readback import save_log
from harness.workload.deliverylog import DeliveryLog
from harness.workload.producer import produce
from harness.cluster.topic import create_topic


def test_split_read_equals_one_task_per_partition(spark, tmp_path):
    cluster = LocalTansuCluster(LocalClusterSpec(), tmp_path)
    try:
        cluster.up()
        create_topic(cluster.client, "split", 2, 1)
        acks = tmp_path / "acks.parquet"
        r = produce(cluster.client, "split", 2, 9000, {"linger.ms": 5}, DeliveryLog(acks, 2))
        assert r.acked == 9000
        # The same values again at the end of partition 0's log: duplicates and a jump-back run.
        produce(cluster.client, "split", 2, 200, {"linger.ms": 5}, DeliveryLog(tmp_path / "again.parquet", 2))
        whole, split = tmp_path / "whole.parquet", tmp_path / "split-read.parquet"
        save_log(spark, cluster.client, "split", 2, whole, split=0)
        save_log(spark, cluster.client, "split", 2, split, split=1000)
    finally:
        cluster.down()
    whole_files, split_files = parquet_files(whole), parquet_files(split)
    assert len(whole_files) == 2 and len(split_files) >= 8  # 4,600 records per partition: 5 ranges each (4 when
    # the listed end lags the log, as it may on Tansu: the last range reads on to the true end)
    assert partitions_in(split_files) == {0, 1}
    for path in split_files:  # each range file holds one partition, in offset order
        t = pq.read_table(path)
        assert len(set(t.column("partition").to_pylist())) == 1
        assert t.column("offset").to_pylist() == sorted(t.column("offset").to_pylist())
    def rows(files):
        return sorted((r for f in files for r in pq.read_table(f).to_pylist()), key=lambda r: (r["partition"], r["offset"]))

    assert rows(split_files) == rows(whole_files)
    got_whole = analyze_variant(spark, whole_files, [str(acks)])
    got_split = analyze_variant(spark, split_files, [str(acks)])
    assert got_whole[0] == got_split[0] and got_whole[0]["duplicates"] == 200
    assert {k: t.to_pylist() for k, t in got_whole[1].items()} == {k: t.to_pylist() for k, t in got_split[1].items()}
