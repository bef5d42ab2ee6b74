package dev.reconf.kstreams;

import java.nio.ByteBuffer;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A running aggregate per route (origin-dest) in a persistent (RocksDB) store: flights, the sum
 * of arrival delays, the sum of distances and a 24-bucket histogram of arrival delays (15-minute
 * buckets from -60 min). Emits the route's updated mean delay per input record. The time spent in
 * {@link #process} is this task's measured processing time.
 *
 * <p>With a service cost (ServiceCost: the instance's known capacity) each record also owes its
 * key's cost, waited out in batches. The task is charged its own records' costs plus the time
 * it measured computing; a park is not charged to the record that happened to trigger it (it
 * pays for the batch's records, of whichever task), so the per-task processing times add up to
 * the instance's busy time and each task's share is its own.
 */
final class RouteAggregator implements Processor<String, String, String, String> {
    static final String STORE = "route-stats";
    private static final int BUCKETS = 24;
    private static final int SIZE = 8 * 3 + 8 * BUCKETS;
    private final TaskStats stats;
    private final ServiceCost cost;
    private KeyValueStore<String, byte[]> store;
    private ProcessorContext<String, String> context;
    private TaskStats.Counters counters;

    RouteAggregator(TaskStats stats, ServiceCost cost) {
        this.stats = stats;
        this.cost = cost;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
        this.context = context;
        this.store = context.getStateStore(STORE);
        this.counters = stats.of(context.taskId().toString());
        long bytes = 0;
        long entries = 0;
        try (KeyValueIterator<String, byte[]> it = store.all()) {
            while (it.hasNext()) {
                KeyValue<String, byte[]> kv = it.next();
                bytes += kv.key.length() + kv.value.length;
                entries++;
            }
        }
        counters.stateBytes.set(bytes);
        counters.entries.set(entries);
    }

    @Override
    public void process(Record<String, String> record) {
        long t0 = System.nanoTime();
        long waited0 = cost.waitedNs();
        long owed = cost.serve(record.key());
        counters.in.incrementAndGet();
        String[] f = record.value().split(",", -1);
        if (record.key() == null || f.length < 4 || f[2].isEmpty()) {
            charge(t0, waited0, owed);
            return; // cancelled or diverted flight: no arrival delay
        }
        double delay = Double.parseDouble(f[2]);
        double distance = f[3].isEmpty() ? 0.0 : Double.parseDouble(f[3]);
        byte[] old = store.get(record.key());
        ByteBuffer b = ByteBuffer.allocate(SIZE);
        if (old != null) {
            b.put(old).flip();
        }
        long n = (old == null ? 0 : b.getLong(0)) + 1;
        double sumDelay = (old == null ? 0 : b.getDouble(8)) + delay;
        double sumDist = (old == null ? 0 : b.getDouble(16)) + distance;
        b.putLong(0, n).putDouble(8, sumDelay).putDouble(16, sumDist);
        int bucket = (int) Math.max(0, Math.min(BUCKETS - 1, Math.floor((delay + 60) / 15)));
        b.putLong(24 + 8 * bucket, (old == null ? 0 : b.getLong(24 + 8 * bucket)) + 1);
        store.put(record.key(), b.array());
        if (old == null) {
            counters.stateBytes.addAndGet(record.key().length() + SIZE);
            counters.entries.incrementAndGet();
        }
        context.forward(record.withValue(String.format("%d,%.2f", n, sumDelay / n)));
        counters.out.incrementAndGet();
        charge(t0, waited0, owed);
    }

    /** The record's processing time: measured compute (without a park) + its own service cost. */
    private void charge(long t0, long waited0, long owed) {
        long parked = cost.waitedNs() - waited0;
        counters.procNs.addAndGet(System.nanoTime() - t0 - parked + owed);
    }
}
