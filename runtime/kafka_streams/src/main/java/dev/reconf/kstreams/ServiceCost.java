package dev.reconf.kstreams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * A known per-record service cost, so an instance saturates at a known rate whatever the
 * machine: it stands for a CPU-bound operator, but the processing thread spends the cost
 * <em>waiting</em>, not computing, so a 2-core machine can host many saturated instances side
 * by side. A record of key k costs {@code baseUs × weight(k) / capacity} microseconds: the
 * instance's configured capacity (1.0 = the reference instance) divides it, the per-key weight
 * table (default 1.0 for every key) skews it.
 *
 * <p>Why batches: parking a thread for a few microseconds is not precise (the kernel's timer
 * slack and the scheduler add 50-100 µs to every park), so at 10^4-10^5 records/s a park per
 * record would cost several times the record. The cost is owed instead, and the thread parks
 * once the debt reaches {@code batchNs} (1 ms); whatever the park really took is paid off, an
 * oversleep included (the debt goes negative and the next records ride on it, at most one
 * batch of credit, so an idle gap never banks capacity). Over many records the time waited is
 * the cost owed to within one batch, never spinning.
 */
final class ServiceCost {
    /** The clock and the park, replaceable in tests (a simulated clock makes them exact). */
    interface Clock {
        long nanoTime();

        void park(long nanos);
    }

    static final Clock SYSTEM = new Clock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public void park(long nanos) {
            LockSupport.parkNanos(nanos);
        }
    };

    static final long DEFAULT_BATCH_NS = 1_000_000L;

    private final double nsPerRecord;
    private final Map<String, Double> weights;
    private final Clock clock;
    private final long batchNs;
    private long owedNs;
    private volatile long waitedNs; // written by the stream thread, read by the stats writer

    ServiceCost(double baseUs, double capacity, Map<String, Double> weights, Clock clock,
                long batchNs) {
        if (!(baseUs >= 0) || Double.isInfinite(baseUs)) {
            throw new IllegalArgumentException("--cost-us must be a finite number >= 0, got " + baseUs);
        }
        if (!(capacity > 0) || Double.isInfinite(capacity)) {
            throw new IllegalArgumentException("--capacity must be a finite number > 0, got " + capacity);
        }
        this.nsPerRecord = baseUs * 1000.0 / capacity;
        this.weights = Map.copyOf(weights);
        this.clock = clock;
        this.batchNs = batchNs;
    }

    /** No cost: the application as it was, every record processed as fast as the machine can. */
    static ServiceCost none() {
        return new ServiceCost(0.0, 1.0, Map.of(), SYSTEM, DEFAULT_BATCH_NS);
    }

    /**
     * From the instance's arguments: {@code --cost-us} (µs per record at capacity 1; absent = no
     * cost), {@code --capacity}, {@code --cost-table} (a JSON object key → weight).
     */
    static ServiceCost fromArgs(Map<String, String> a) throws IOException {
        double base = Double.parseDouble(a.getOrDefault("cost-us", "0"));
        double capacity = Double.parseDouble(a.getOrDefault("capacity", "1.0"));
        Map<String, Double> table = a.containsKey("cost-table")
            ? readTable(Path.of(a.get("cost-table"))) : Map.of();
        return new ServiceCost(base, capacity, table, SYSTEM, DEFAULT_BATCH_NS);
    }

    static Map<String, Double> readTable(Path file) throws IOException {
        JsonNode root = new ObjectMapper().readTree(Files.readString(file, StandardCharsets.UTF_8));
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException(file + ": the cost table must be a JSON object "
                + "{\"<key>\": <weight>, ...}");
        }
        Map<String, Double> out = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            double w = e.getValue().asDouble(-1);
            if (!e.getValue().isNumber() || w < 0 || Double.isInfinite(w)) {
                throw new IllegalArgumentException(file + ": weight of key '" + e.getKey()
                    + "' must be a finite number >= 0, got " + e.getValue());
            }
            out.put(e.getKey(), w);
        }
        return out;
    }

    boolean active() {
        return nsPerRecord > 0;
    }

    /** This key's cost on this instance, in nanoseconds. */
    long costNs(String key) {
        double w = key == null ? 1.0 : weights.getOrDefault(key, 1.0);
        return Math.round(nsPerRecord * w);
    }

    /**
     * Owe one record of {@code key}; park if the debt reached a batch. Returns the record's cost
     * (ns): the processing time it is charged, whichever record's park pays for it.
     */
    long serve(String key) {
        long cost = costNs(key);
        if (cost == 0) {
            return 0;
        }
        owedNs += cost;
        if (owedNs >= batchNs) {
            long t0 = clock.nanoTime();
            clock.park(owedNs);
            long took = clock.nanoTime() - t0;
            waitedNs += took;
            owedNs = Math.max(owedNs - took, -batchNs);
        }
        return cost;
    }

    /** Nanoseconds parked since the start (the wait actually spent). */
    long waitedNs() {
        return waitedNs;
    }
}
