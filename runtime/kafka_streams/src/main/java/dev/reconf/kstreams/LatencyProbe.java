package dev.reconf.kstreams;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * End-to-end latency and consumer lag of one or more Kafka Streams applications (the
 * benchmark's arms), measured from outside them.
 *
 * <p>Latency: it reads each arm's output topic (assigned, no group, from the beginning); an
 * output record carries its input record's timestamp (Kafka Streams forwards it), which the
 * open-loop producer set to the instant the record was due, so {@code now − timestamp} at the
 * moment this consumer receives it is the record's production → result-written latency (plus
 * this consumer's fetch, the same for every arm). Lag: every second the input topic's end
 * offsets (admin client) minus the offsets the application's group committed (Kafka Streams
 * commits every {@code commit.interval.ms}), summed over partitions. The admin calls run on
 * their own thread: two round trips per arm every second on the polling thread would hold the
 * records that arrive meanwhile, a delay of tens of ms on a loaded machine that lands exactly in
 * the p99 being measured.
 *
 * <p>Every {@code --every-ms} (1000) it appends one JSON line per arm to {@code --out}:
 * {@code {"ts_ms", "arm", "out": records read, "out_total": since the start, "lat": {"<ms>":
 * count, …}, "end": Σ end offsets, "ends": [end offset per input partition], "committed":
 * Σ committed, "lag": end − committed, "out_at_end": results read when "end" was sampled}} — the
 * exact latency histogram in
 * whole milliseconds, so any window's percentiles are exact (runtime/kafka_streams/latency.py).
 * Stops when {@code --stop FILE} exists.
 *
 * <p>Arguments: --bootstrap --arms name:input:output:group[,…] --out FILE --stop FILE
 * [--every-ms 1000]
 */
public final class LatencyProbe {
    private static final ObjectMapper JSON = new ObjectMapper();

    private LatencyProbe() {
    }

    record Arm(String name, String input, String output, String group) {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = Args.parse(argv);
        List<Arm> arms = new ArrayList<>();
        for (String spec : a.get("arms").split(",")) {
            String[] f = spec.split(":");
            if (f.length != 4) {
                throw new IllegalArgumentException("--arms: expected name:input:output:group, got " + spec);
            }
            arms.add(new Arm(f[0], f[1], f[2], f[3]));
        }
        Path out = Path.of(a.get("out"));
        Path stop = Path.of(a.get("stop"));
        long every = Long.parseLong(a.getOrDefault("every-ms", "1000"));
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 50);
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        Map<String, Arm> byOutput = new HashMap<>();
        arms.forEach(arm -> byOutput.put(arm.output(), arm));
        Map<String, TreeMap<Long, Long>> hist = new LinkedHashMap<>();
        Map<String, Long> count = new HashMap<>();
        Map<String, Long> total = new ConcurrentHashMap<>(); // read by the lag sampler too
        arms.forEach(arm -> hist.put(arm.name(), new TreeMap<>()));
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp);
             Admin admin = Admin.create(ap);
             BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8,
                 StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
            List<TopicPartition> outputs = new ArrayList<>();
            Map<String, List<TopicPartition>> inputs = new HashMap<>();
            for (Arm arm : arms) {
                outputs.addAll(partitions(consumer, arm.output()));
                inputs.put(arm.name(), partitions(consumer, arm.input()));
            }
            consumer.assign(outputs);
            // the newest lag sample per arm, taken off the polling thread
            Map<String, ObjectNode> lags = new ConcurrentHashMap<>();
            ScheduledExecutorService sampler = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "lag-sampler");
                t.setDaemon(true);
                return t;
            });
            sampler.scheduleAtFixedRate(() -> arms.forEach(
                arm -> lags.put(arm.name(), lag(admin, arm, inputs.get(arm.name()),
                    () -> total.getOrDefault(arm.name(), 0L)))),
                0, every, TimeUnit.MILLISECONDS);
            long next = System.currentTimeMillis() + every;
            while (!Files.exists(stop)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(20))) {
                    long now = System.currentTimeMillis();
                    Arm arm = byOutput.get(r.topic());
                    hist.get(arm.name()).merge(Math.max(0L, now - r.timestamp()), 1L, Long::sum);
                    count.merge(arm.name(), 1L, Long::sum);
                    total.merge(arm.name(), 1L, Long::sum);
                }
                long now = System.currentTimeMillis();
                if (now >= next) {
                    next += every;
                    for (Arm arm : arms) {
                        ObjectNode sampled = lags.get(arm.name());
                        ObjectNode line = sampled == null ? unknownLag(arm) : sampled.deepCopy();
                        line.put("ts_ms", now);
                        line.put("out", count.getOrDefault(arm.name(), 0L));
                        line.put("out_total", total.getOrDefault(arm.name(), 0L));
                        ObjectNode lat = line.putObject("lat");
                        hist.get(arm.name()).forEach((ms, n) -> lat.put(Long.toString(ms), n));
                        w.write(JSON.writeValueAsString(line));
                        w.newLine();
                        hist.get(arm.name()).clear();
                        count.remove(arm.name());
                    }
                    w.flush();
                }
            }
            sampler.shutdownNow();
        }
    }

    private static ObjectNode unknownLag(Arm arm) {
        ObjectNode line = JSON.createObjectNode();
        line.put("arm", arm.name());
        line.put("end", -1L);
        line.put("committed", -1L);
        line.put("lag", -1L);
        return line;
    }

    private static List<TopicPartition> partitions(KafkaConsumer<String, String> c, String topic) {
        List<TopicPartition> out = new ArrayList<>();
        for (PartitionInfo p : c.partitionsFor(topic, Duration.ofSeconds(30))) {
            out.add(new TopicPartition(topic, p.partition()));
        }
        return out;
    }

    /** The arm's input end offsets and its group's committed offsets now (−1 each if unknown),
     * and {@code out_at_end}: the results read when the end offsets came back, so that the
     * backlog (end − results read) compares counts of one instant. */
    private static ObjectNode lag(Admin admin, Arm arm, List<TopicPartition> input,
                                  java.util.function.LongSupplier readSoFar) {
        ObjectNode line = JSON.createObjectNode();
        line.put("arm", arm.name());
        long end = -1;
        long committed = -1;
        try {
            Map<TopicPartition, OffsetSpec> want = new HashMap<>();
            input.forEach(tp -> want.put(tp, OffsetSpec.latest()));
            ListOffsetsResult ends = admin.listOffsets(want);
            var endOffsets = ends.all().get(5, TimeUnit.SECONDS);
            line.put("out_at_end", readSoFar.getAsLong());
            Map<TopicPartition, OffsetAndMetadata> done = admin.listConsumerGroupOffsets(arm.group())
                .partitionsToOffsetAndMetadata().get(5, TimeUnit.SECONDS);
            end = 0;
            committed = 0;
            long[] byPartition = new long[input.size()];
            for (var e : endOffsets.entrySet()) {
                end += e.getValue().offset();
                int k = e.getKey().partition();
                if (k < byPartition.length) {
                    byPartition[k] = e.getValue().offset();
                }
                OffsetAndMetadata c = done.get(e.getKey());
                committed += c == null ? 0 : c.offset();
            }
            // per partition: the records each task was offered, exactly (the data's bound)
            var perPartition = line.putArray("ends");
            for (long v : byPartition) {
                perPartition.add(v);
            }
        } catch (Exception exc) {
            line.put("error", exc.toString());
        }
        line.put("end", end);
        line.put("committed", committed);
        line.put("lag", end < 0 ? -1 : end - committed);
        return line;
    }
}
