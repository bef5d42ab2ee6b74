package dev.reconf.kstreams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cost model on a simulated clock whose every park oversleeps (as Linux's timer slack
 * does): exact and repeatable, no wall time involved. An instance fed R records/s at capacity C
 * saturates at C × 10^6 / cost_us records/s, within 10 %.
 */
class ServiceCostTest {
    /** A clock that only moves when parked (plus a fixed oversleep per park) or told to. */
    static final class SimClock implements ServiceCost.Clock {
        long now;
        long parks;
        final long oversleepNs;

        SimClock(long oversleepNs) {
            this.oversleepNs = oversleepNs;
        }

        @Override
        public long nanoTime() {
            return now;
        }

        @Override
        public void park(long nanos) {
            parks++;
            now += nanos + oversleepNs;
        }
    }

    /**
     * Records arrive at {@code rate}/s for {@code seconds}; the instance serves them in order,
     * idle (not parked) until the next arrives. Returns records served per second of the run.
     */
    static double served(double rate, double costUs, double capacity, Map<String, Double> w,
                         String[] keys, double seconds) {
        SimClock clock = new SimClock(80_000);
        ServiceCost cost = new ServiceCost(costUs, capacity, w, clock, ServiceCost.DEFAULT_BATCH_NS);
        long horizon = (long) (seconds * 1e9);
        long n = 0;
        for (long i = 0; ; i++) {
            long arrival = (long) (i * 1e9 / rate);
            if (arrival >= horizon || clock.now >= horizon) {
                break;
            }
            clock.now = Math.max(clock.now, arrival);
            cost.serve(keys[(int) (i % keys.length)]);
            n++;
        }
        return n / (Math.max(clock.now, horizon) / 1e9);
    }

    @Test
    void belowCapacityEveryRecordIsServedAtTheOfferedRate() {
        String[] keys = {"a"};
        for (double capacity : new double[] {1.0, 2.0}) {
            double cap = capacity * 1e6 / 1000.0; // 1000 µs per record: 1000/s at capacity 1
            double got = served(0.5 * cap, 1000.0, capacity, Map.of(), keys, 20);
            assertEquals(0.5 * cap, got, 0.1 * 0.5 * cap, "capacity " + capacity);
        }
    }

    @Test
    void aboveCapacityItSaturatesAtCapacityOverCost() {
        String[] keys = {"a"};
        for (double capacity : new double[] {0.5, 1.0, 2.0}) {
            for (double costUs : new double[] {10.0, 100.0, 2000.0}) { // 10^5 .. 500 records/s
                double cap = capacity * 1e6 / costUs;
                double got = served(2.0 * cap, costUs, capacity, Map.of(), keys, 5);
                assertEquals(cap, got, 0.1 * cap, "capacity " + capacity + ", cost " + costUs + " us");
            }
        }
    }

    @Test
    void perKeyWeightsSetTheMixedCost() {
        // half the records cost 3x: a mean weight of 2, so the instance saturates at half the rate
        String[] keys = {"hot", "cold"};
        double got = served(5000, 100.0, 1.0, Map.of("hot", 3.0), keys, 5);
        assertEquals(5000, got, 500);
    }

    @Test
    void parksInBatchesNotPerRecord() {
        SimClock clock = new SimClock(80_000);
        ServiceCost cost = new ServiceCost(10.0, 1.0, Map.of(), clock, ServiceCost.DEFAULT_BATCH_NS);
        for (int i = 0; i < 100_000; i++) {
            assertEquals(10_000, cost.serve("k"));
        }
        // 1 s of cost at 10^5 records/s: about a thousand 1 ms parks, the oversleep paid back
        assertTrue(clock.parks <= 1000, "parks " + clock.parks);
        assertEquals(1e9, clock.now, 0.01e9);
        assertEquals(clock.now, cost.waitedNs());
    }

    @Test
    void noCostNeverParks() {
        SimClock clock = new SimClock(80_000);
        ServiceCost cost = new ServiceCost(0.0, 1.0, Map.of(), clock, ServiceCost.DEFAULT_BATCH_NS);
        for (int i = 0; i < 1000; i++) {
            assertEquals(0, cost.serve("k"));
        }
        assertEquals(0, clock.parks);
    }

    @Test
    void badInputIsRefusedWithTheArgumentsName(@TempDir Path dir) throws Exception {
        var bad = assertThrows(IllegalArgumentException.class,
            () -> new ServiceCost(100, 0, Map.of(), ServiceCost.SYSTEM, 1));
        assertTrue(bad.getMessage().contains("--capacity"), bad.getMessage());
        Path table = dir.resolve("costs.json");
        Files.writeString(table, "{\"JFK-LAX\": \"heavy\"}");
        var wrong = assertThrows(IllegalArgumentException.class, () -> ServiceCost.readTable(table));
        assertTrue(wrong.getMessage().contains("JFK-LAX"), wrong.getMessage());
        Files.writeString(table, "{\"JFK-LAX\": 2.5}");
        assertEquals(Map.of("JFK-LAX", 2.5), ServiceCost.readTable(table));
    }
}
