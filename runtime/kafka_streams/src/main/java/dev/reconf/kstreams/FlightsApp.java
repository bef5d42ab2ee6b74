package dev.reconf.kstreams;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.Stores;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One instance of the flights application = one reconf node: reads flights keyed by route from
 * {@code --input}, keeps a running aggregate per route in a persistent store (RouteAggregator),
 * writes updates to {@code --output}. Its {@code client.tag.reconf.node} is {@code --node}; its
 * assignor is {@link ReconfTaskAssignor}. Every {@code --stats-ms} it writes {@code --stats} (JSON,
 * atomically): its node id and capacity, its active tasks as Kafka Streams reports them
 * (metadataForLocalThreads), per-task counters (TaskStats), the changelog restores it ran, its
 * process CPU time and its input lag. runtime/kafka_streams/stats.py lands those.
 *
 * <p>Arguments: --bootstrap --app-id --node --capacity --input --output --state-dir --stats
 * --published-root --job --applied-file [--followup-ms 10000] [--stats-ms 500] [--default-assignor]
 * [--state-root DIR] [--wave-poll-ms 1000] [--wave-timeout-ms 120000] (ReconfTaskAssignor's move
 * schedule: where {@code <job>/execution.json} and {@code <job>/STOP} are, how often a running
 * wave is checked, how long its tasks may take to run) [--cost-us US] [--cost-table FILE] (a known
 * capacity: each record waits its key's cost / --capacity, ServiceCost) [--commit-ms 500]
 * [--linger-ms L] (the Streams producer's linger; Kafka Streams' default 100 ms when absent)
 * [--fetch-wait-ms W] (the consumer waits up to W ms for 64 KiB: fewer poll-loop iterations, each
 * costing CPU whatever it brings, at up to W ms of latency)
 */
public final class FlightsApp {
    private static final Logger LOG = LoggerFactory.getLogger(FlightsApp.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private FlightsApp() {
    }

    /** One running instance: its Streams client, its counters, its arguments, its stats file. */
    private record Instance(KafkaStreams streams, TaskStats stats, Map<String, String> a, Path out) {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> base = Args.parse(argv);
        List<Instance> running = new CopyOnWriteArrayList<>();
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            running.parallelStream().forEach(i -> i.streams().close(java.time.Duration.ofSeconds(10)));
            done.countDown();
        }));
        for (Map<String, String> a : instances(base)) {
            running.add(start(a));
        }
        long every = Long.parseLong(base.getOrDefault("stats-ms", "500"));
        while (!done.await(every, java.util.concurrent.TimeUnit.MILLISECONDS)) {
            for (Instance i : running) {
                try {
                    write(i.out(), report(i.streams(), i.stats(), i.a()));
                } catch (Exception exc) {
                    LOG.warn("stats of {} not written: {}", i.a().get("node"), exc.toString());
                }
            }
        }
    }

    /**
     * The instances this JVM runs: the one its arguments describe, or with {@code --instances
     * node:capacity,...} one per entry, each its own Kafka Streams client (group member, stream
     * thread, client tag, state directory {@code <state-dir>/<node>}, statistics file
     * {@code <stats-dir>/<node>.json}). Several instances in one JVM share its start-up, JIT
     * compilation and garbage collection: a machine of two cores hosts three applications of
     * three instances each. With the waiting cost model an instance's capacity is its own
     * stream thread's, whichever JVM it is in.
     */
    static List<Map<String, String>> instances(Map<String, String> a) {
        if (!a.containsKey("instances")) {
            return List.of(a);
        }
        List<Map<String, String>> out = new ArrayList<>();
        for (String item : a.get("instances").split(",")) {
            String[] f = item.split(":");
            if (f.length != 2 || !a.containsKey("stats-dir") || !a.containsKey("state-dir")) {
                throw new IllegalArgumentException("--instances: expected node:capacity,... with "
                    + "--state-dir and --stats-dir, got '" + item + "'");
            }
            Map<String, String> one = new HashMap<>(a);
            one.put("node", f[0]);
            one.put("capacity", f[1]);
            one.put("state-dir", a.get("state-dir") + "/" + f[0]);
            one.put("stats", a.get("stats-dir") + "/" + f[0] + ".json");
            out.add(one);
        }
        return out;
    }

    private static Instance start(Map<String, String> a) throws Exception {
        TaskStats stats = new TaskStats();
        // one stream thread: the instance's capacity is that thread's, and the cost model's
        // debt is that thread's alone
        ServiceCost cost = ServiceCost.fromArgs(a);
        StreamsBuilder builder = new StreamsBuilder();
        builder.addStateStore(Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore(RouteAggregator.STORE), Serdes.String(),
            Serdes.ByteArray()));
        builder.stream(a.get("input"), Consumed.with(Serdes.String(), Serdes.String()))
            .process(() -> new RouteAggregator(stats, cost), RouteAggregator.STORE)
            .to(a.get("output"), Produced.with(Serdes.String(), Serdes.String()));

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, a.get("app-id"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, a.get("state-dir"));
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, Integer.parseInt(a.getOrDefault("commit-ms", "500")));
        if (a.containsKey("fetch-wait-ms")) { // fewer, larger fetches: the poll loop's cost per record
            p.put(StreamsConfig.consumerPrefix("fetch.min.bytes"), 65536);
            p.put(StreamsConfig.consumerPrefix("fetch.max.wait.ms"), Integer.parseInt(a.get("fetch-wait-ms")));
        }
        if (a.containsKey("linger-ms")) {
            p.put(StreamsConfig.producerPrefix("linger.ms"), Integer.parseInt(a.get("linger-ms")));
        }
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.CLIENT_TAG_PREFIX + "reconf.node", a.get("node"));
        p.put("group.protocol", "classic"); // task.assignor.class is the classic protocol's hook
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10_000);
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1_000);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        if (!a.containsKey("default-assignor")) {
            p.put(StreamsConfig.TASK_ASSIGNOR_CLASS_CONFIG, ReconfTaskAssignor.class.getName());
            p.put(ReconfTaskAssignor.PUBLISHED_ROOT, a.get("published-root"));
            p.put(ReconfTaskAssignor.JOB, a.get("job"));
            p.put(ReconfTaskAssignor.APPLIED_FILE, a.get("applied-file"));
            p.put(ReconfTaskAssignor.FOLLOWUP_MS, a.getOrDefault("followup-ms", "10000"));
            for (String key : new String[] {"state-root", "wave-poll-ms", "wave-timeout-ms"}) {
                if (a.containsKey(key)) {
                    p.put("reconf." + key.replace('-', '.'), a.get(key));
                }
            }
        }
        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        String changelog = a.get("app-id") + "-" + RouteAggregator.STORE + "-changelog";
        streams.setGlobalStateRestoreListener(new Restores(stats, changelog));
        stats.cost = cost;
        streams.start();
        LOG.info("instance {} (capacity {}) started", a.get("node"), a.get("capacity"));
        return new Instance(streams, stats, a, Path.of(a.get("stats")));
    }

    private static ObjectNode report(KafkaStreams streams, TaskStats stats, Map<String, String> a) {
        ObjectNode r = JSON.createObjectNode();
        r.put("format", 1);
        r.put("node", a.get("node"));
        r.put("capacity", Double.parseDouble(a.getOrDefault("capacity", "1.0")));
        r.put("cost_us", Double.parseDouble(a.getOrDefault("cost-us", "0")));
        r.put("waited_ns", stats.cost == null ? 0L : stats.cost.waitedNs());
        r.put("pid", ProcessHandle.current().pid());
        r.put("ts_ms", System.currentTimeMillis());
        r.put("state", streams.state().name());
        var os = ManagementFactory.getOperatingSystemMXBean();
        r.put("process_cpu_ns", os instanceof com.sun.management.OperatingSystemMXBean sun
            ? sun.getProcessCpuTime() : -1L);
        TreeSet<String> active = new TreeSet<>();
        if (streams.state().isRunningOrRebalancing()) {
            for (ThreadMetadata t : streams.metadataForLocalThreads()) {
                t.activeTasks().forEach(task -> active.add(task.taskId().toString()));
            }
        }
        ArrayNode act = r.putArray("active_tasks");
        active.forEach(act::add);
        ObjectNode tasks = r.putObject("tasks");
        new TreeMap<>(stats.tasks).forEach((id, c) -> {
            ObjectNode t = tasks.putObject(id);
            t.put("in", c.in.get());
            t.put("out", c.out.get());
            t.put("proc_ns", c.procNs.get());
            t.put("state_bytes", c.stateBytes.get());
            t.put("entries", c.entries.get());
        });
        ArrayNode restores = r.putArray("restores");
        stats.restores.forEach(x -> restores.addObject().put("task", x.task())
            .put("records", x.records()).put("ms", x.ms()).put("end_ms", x.endMs()));
        double lag = 0;
        for (var e : streams.metrics().entrySet()) {
            var name = e.getKey();
            if (name.name().equals("records-lag") && a.get("input").equals(name.tags().get("topic"))
                    && e.getValue().metricValue() instanceof Double d && !d.isNaN()) {
                lag += d;
            }
        }
        r.put("input_lag", lag);
        return r;
    }

    private static void write(Path out, ObjectNode report) throws java.io.IOException {
        Path tmp = out.resolveSibling("." + out.getFileName() + ".tmp");
        Files.writeString(tmp, JSON.writeValueAsString(report) + "\n", StandardCharsets.UTF_8);
        Files.move(tmp, out, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** Times each changelog restore of the store: the moved task's migration cost. */
    private static final class Restores implements StateRestoreListener {
        private final TaskStats stats;
        private final String changelog;
        private final Map<TopicPartition, Long> started = new ConcurrentHashMap<>();

        Restores(TaskStats stats, String changelog) {
            this.stats = stats;
            this.changelog = changelog;
        }

        @Override
        public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
            started.put(tp, System.currentTimeMillis());
        }

        @Override
        public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
        }

        @Override
        public void onRestoreEnd(TopicPartition tp, String store, long total) {
            long now = System.currentTimeMillis();
            long t0 = started.getOrDefault(tp, now);
            if (tp.topic().equals(changelog)) {
                stats.restores.add(new TaskStats.Restore("0_" + tp.partition(), total, now - t0, now));
            }
        }
    }
}
