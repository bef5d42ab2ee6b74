package dev.reconf.kstreams;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * This instance's per-task counters since it started: records in and out, nanoseconds spent in the
 * task's processor (the measured processing time), and the task's store size now (key + value
 * bytes: the logical state a changelog restore moves). Cumulative, so a reader takes differences
 * between two snapshots; a task that left keeps its counters (it no longer grows).
 */
final class TaskStats {
    static final class Counters {
        final AtomicLong in = new AtomicLong();
        final AtomicLong out = new AtomicLong();
        final AtomicLong procNs = new AtomicLong();
        final AtomicLong stateBytes = new AtomicLong();
        final AtomicLong entries = new AtomicLong();
    }

    /** One changelog restore of a task's store on this instance. */
    record Restore(String task, long records, long ms, long endMs) {
    }

    final Map<String, Counters> tasks = new ConcurrentHashMap<>();
    volatile ServiceCost cost; // the instance's cost model, for its waited time (null: none)
    final java.util.List<Restore> restores = new java.util.concurrent.CopyOnWriteArrayList<>();

    Counters of(String task) {
        return tasks.computeIfAbsent(task, t -> new Counters());
    }
}
