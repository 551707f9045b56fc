/*
 * A stale transaction-verification entry makes a partition leader refuse a producer's next, in-order batch.
 *
 * Standalone reproduction for Apache Kafka 4.1.0 (transaction protocol version 1: Produce v10, AddPartitionsToTxn v0,
 * EndTxn v1, the versions librdkafka 2.x sends, which does not speak KIP-890 part 2). It speaks
 * the Kafka protocol itself over one TCP connection, using only kafka-clients' request and response classes,
 * so it can send a Produce request again after its transaction ended, as a request held in the network and
 * delivered late would arrive:
 *
 *   1. FindCoordinator, InitProducerId; transaction 1: AddPartitionsToTxn(p0), Produce(p0, base sequence 0, 5 records), EndTxn(commit)
 *   2. wait until the coordinator reports the transaction CompleteCommit (its marker is written at p0)
 *   3. the same Produce request again (sequence 0, same epoch): the late duplicate. The leader starts a
 *      verification for it (the transaction it belonged to has ended), the coordinator answers that p0 is not in
 *      the producer's transaction, and the leader refuses it (INVALID_TXN_STATE); the verification state it
 *      created, with lowest sequence 0, stays
 *   4. transaction 2: AddPartitionsToTxn(p0), Produce(p0, base sequence 5: the next one in order)
 *      expected: NONE;  with verification on (4.1.0's default), actual: OUT_OF_ORDER_SEQUENCE_NUMBER, and the
 *      broker logs "... 5 (incoming seq. number), 0 (earliest seen sequence)"
 *
 * Needs a single-broker cluster (it sends every request, including the transactional ones, to the bootstrap
 * broker), e.g. the distribution's quick start:
 *   KAFKA_CLUSTER_ID="$(bin/kafka-storage.sh random-uuid)"
 *   bin/kafka-storage.sh format --standalone -t $KAFKA_CLUSTER_ID -c config/server.properties
 *   bin/kafka-server-start.sh config/server.properties
 * Then:
 *   java -cp "$KAFKA_HOME/libs/*" StaleVerification.java [localhost:9092] [--verification on|off]
 * --verification sets the broker's dynamic transaction.partition.verification.enable first (default: leave it).
 * Exit status: 1 when the in-order batch was refused (reproduced), 0 when it was written, 2 on anything else.
 */

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.SimpleRecord;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AddPartitionsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnResponse;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.EndTxnResponse;
import org.apache.kafka.common.requests.FindCoordinatorRequest;
import org.apache.kafka.common.requests.FindCoordinatorResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestHeader;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

public class StaleVerification {
    // the versions librdkafka uses (Produce at most v10, AddPartitionsToTxn v0, EndTxn at most v1); transaction
    // version 2 would be Produce v12+, EndTxn v5+
    static final short PRODUCE_V = 10;
    static final short ADD_PARTITIONS_V = 0;
    static final short END_TXN_V = 1;
    static final short INIT_PID_V = 4;

    static DataInputStream in;
    static DataOutputStream out;
    static int correlationId = 0;

    static AbstractResponse send(AbstractRequest request) throws Exception {
        RequestHeader header = new RequestHeader(request.apiKey(), request.version(), "stale-verification", ++correlationId);
        ByteBuffer body = request.serializeWithHeader(header);
        byte[] bytes = new byte[body.remaining()];
        body.get(bytes);
        out.writeInt(bytes.length);
        out.write(bytes);
        out.flush();
        byte[] response = new byte[in.readInt()];
        in.readFully(response);
        return AbstractResponse.parseResponse(ByteBuffer.wrap(response), header);
    }

    static MemoryRecords batch(long producerId, short epoch, int baseSequence, int count, String prefix) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++)
            records[i] = new SimpleRecord(("" + prefix + (baseSequence + i)).getBytes(StandardCharsets.UTF_8));
        return MemoryRecords.withTransactionalRecords(Compression.NONE, producerId, epoch, baseSequence, records);
    }

    static ProduceResponseData.PartitionProduceResponse produce(String txnId, String topic, MemoryRecords records) throws Exception {
        ProduceRequestData data = new ProduceRequestData().setAcks((short) -1).setTimeoutMs(30000).setTransactionalId(txnId);
        ProduceRequestData.TopicProduceData topicData = new ProduceRequestData.TopicProduceData().setName(topic);
        topicData.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(records));
        data.topicData().add(topicData);
        ProduceResponse response = (ProduceResponse) send(new ProduceRequest.Builder(PRODUCE_V, PRODUCE_V, data).build(PRODUCE_V));
        return response.data().responses().iterator().next().partitionResponses().get(0);
    }

    static Errors addPartition(String txnId, long producerId, short epoch, TopicPartition tp) throws Exception {
        for (int attempt = 0; ; attempt++) {
            AddPartitionsToTxnResponse response = (AddPartitionsToTxnResponse) send(
                AddPartitionsToTxnRequest.Builder.forClient(txnId, producerId, epoch, List.of(tp)).build(ADD_PARTITIONS_V));
            Collection<Map<TopicPartition, Errors>> errors = response.errors().values();
            Errors error = errors.isEmpty() ? Errors.NONE : errors.iterator().next().getOrDefault(tp, Errors.NONE);
            if (error != Errors.CONCURRENT_TRANSACTIONS || attempt >= 100) return error;
            Thread.sleep(100);
        }
    }

    static String describe(ProduceResponseData.PartitionProduceResponse r) {
        return Errors.forCode(r.errorCode()) + " (base offset " + r.baseOffset()
            + (r.errorMessage() != null ? ", message: " + r.errorMessage() : "") + ")";
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = "localhost:9092";
        String verification = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--verification")) verification = args[++i];
            else bootstrap = args[i];
        }
        String suffix = Long.toString(System.currentTimeMillis());
        String topic = "stale-verification-" + suffix;
        String txnId = "stale-verification-" + suffix;
        TopicPartition tp = new TopicPartition(topic, 0);

        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(props)) {
            if (admin.describeCluster().nodes().get().size() != 1)
                throw new IllegalStateException("this reproduction sends everything to the bootstrap broker: run it against a single-broker cluster");
            if (verification != null) {
                String value = verification.equals("on") ? "true" : "false";
                ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "");   // cluster-wide default
                admin.incrementalAlterConfigs(Map.of(broker, List.of(new AlterConfigOp(
                    new ConfigEntry("transaction.partition.verification.enable", value), AlterConfigOp.OpType.SET)))).all().get();
                System.out.println("transaction.partition.verification.enable=" + value + " (dynamic, cluster-wide)");
                Thread.sleep(1000);
            }
            try {
                admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) throw e;
            }
            Thread.sleep(1000);

            String[] hostPort = bootstrap.split(":");
            try (Socket socket = new Socket(hostPort[0], Integer.parseInt(hostPort[1]))) {
                in = new DataInputStream(socket.getInputStream());
                out = new DataOutputStream(socket.getOutputStream());

                // FindCoordinator first: it creates __transaction_state on first use (the coordinator is this broker)
                for (int attempt = 0; ; attempt++) {
                    FindCoordinatorResponse r = (FindCoordinatorResponse) send(new FindCoordinatorRequest.Builder(
                        new FindCoordinatorRequestData().setKey(txnId)
                            .setKeyType(FindCoordinatorRequest.CoordinatorType.TRANSACTION.id())).build((short) 3));
                    if (r.error() == Errors.NONE) break;
                    if (attempt > 100) throw new IllegalStateException("FindCoordinator: " + r.error());
                    Thread.sleep(200);
                }

                long producerId = -1;
                short epoch = -1;
                for (int attempt = 0; ; attempt++) {
                    InitProducerIdResponse r = (InitProducerIdResponse) send(new InitProducerIdRequest.Builder(
                        new InitProducerIdRequestData().setTransactionalId(txnId).setTransactionTimeoutMs(60000)
                            .setProducerId(-1).setProducerEpoch((short) -1)).build(INIT_PID_V));
                    if (r.error() == Errors.NONE) {
                        producerId = r.data().producerId();
                        epoch = r.data().producerEpoch();
                        break;
                    }
                    if (!(r.error().exception() instanceof RetriableException) || attempt > 100)
                        throw new IllegalStateException("InitProducerId: " + r.error());
                    Thread.sleep(200);
                }
                System.out.println("topic " + topic + ", transactional.id " + txnId + ": producer id " + producerId + ", epoch " + epoch);

                // transaction 1
                System.out.println("txn 1: AddPartitionsToTxn(" + tp + "): " + addPartition(txnId, producerId, epoch, tp));
                ProduceResponseData.PartitionProduceResponse first = produce(txnId, topic, batch(producerId, epoch, 0, 5, "txn1-"));
                System.out.println("txn 1: Produce(sequence 0-4): " + describe(first));
                if (first.errorCode() != 0) throw new IllegalStateException("the first batch was not written");
                EndTxnResponse end = (EndTxnResponse) send(new EndTxnRequest.Builder(new EndTxnRequestData()
                    .setTransactionalId(txnId).setProducerId(producerId).setProducerEpoch(epoch).setCommitted(true), false)
                    .build(END_TXN_V));
                System.out.println("txn 1: EndTxn(commit): " + end.error());

                // wait until the commit marker is at the partition (the coordinator completes the transaction after)
                TransactionState state = null;
                for (int i = 0; i < 100; i++) {
                    state = admin.describeTransactions(List.of(txnId)).description(txnId).get().state();
                    if (state == TransactionState.COMPLETE_COMMIT) break;
                    Thread.sleep(100);
                }
                System.out.println("coordinator: transaction state " + state);

                // the late duplicate of transaction 1's Produce request
                ProduceResponseData.PartitionProduceResponse late = produce(txnId, topic, batch(producerId, epoch, 0, 5, "txn1-"));
                System.out.println("late duplicate of txn 1's Produce(sequence 0-4): " + describe(late));

                // transaction 2: the next batch, in order
                System.out.println("txn 2: AddPartitionsToTxn(" + tp + "): " + addPartition(txnId, producerId, epoch, tp));
                ProduceResponseData.PartitionProduceResponse next = produce(txnId, topic, batch(producerId, epoch, 5, 5, "txn2-"));
                System.out.println("txn 2: Produce(sequence 5-9, the next in order): " + describe(next));

                EndTxnResponse abort = (EndTxnResponse) send(new EndTxnRequest.Builder(new EndTxnRequestData()
                    .setTransactionalId(txnId).setProducerId(producerId).setProducerEpoch(epoch).setCommitted(false), false)
                    .build(END_TXN_V));
                System.out.println("txn 2: EndTxn(abort): " + abort.error());

                Errors error = Errors.forCode(next.errorCode());
                if (error == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER) {
                    System.out.println("REPRODUCED: the in-order batch (sequence 5) was refused as out of order after the late duplicate (sequence 0)");
                    System.exit(1);
                } else if (error == Errors.NONE) {
                    System.out.println("NOT REPRODUCED: the in-order batch was written");
                    System.exit(0);
                } else {
                    System.out.println("UNEXPECTED: " + error);
                    System.exit(2);
                }
            }
        }
    }
}
