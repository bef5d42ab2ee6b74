package dev.reconf.kstreams;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One rebalance's step through a manifest's move schedule (runtime/execution.py's contract, on
 * Kafka Streams). {@link ReconfTaskAssignor} hands out the assignment of wave k (the running
 * assignment plus wave k's moves) with a follow-up rebalance {@code reconf.wave.poll.ms} later;
 * at each following rebalance wave k is complete when every task it moves reports RUNNING on its
 * destination ({@link #RUNNING}: the instance's subscription carries Kafka's
 * {@code Task.LATEST_OFFSET} for an active task only once it is restored and processing); then
 * wave k+1 is handed out, and after the last one the target is the applied version.
 *
 * <p>Stop: the flag {@code <reconf.state.root>/<job>/STOP} ({@code reconf stop --job J}) is
 * honoured before a wave is handed out (the current one always finishes) and consumed; the
 * partial assignment keeps running. Failure: a wave whose tasks are not all RUNNING within
 * {@code reconf.wave.timeout.ms} ends the schedule; the tasks that came up stay moved, the others
 * go back to their source. Either way the execution file says what runs, the assignor keeps it
 * until a newer version, and that version's waves start from it.
 *
 * <p>Byte rate: under the schedule's {@code max_bytes_per_second} R, a wave of B state bytes lasts
 * at least B / R from its hand-out; the next wave is handed out only then (runtime/execution.py's
 * pacing, on the wall clock). Kafka Streams restores a store from its changelog at its own speed:
 * the pacing bounds the rate of waves, not the restore's instantaneous throughput.
 */
final class WaveSteps {
    /** Kafka Streams' {@code Task.LATEST_OFFSET}: the lag an instance reports for an active task
     * it runs (restored, processing). */
    static final long RUNNING = -2L;
    private static final Logger LOG = LoggerFactory.getLogger(WaveSteps.class);

    private final String job;
    private final Path dir;
    private final Path appliedFile;
    private final long pollMs;
    private final long timeoutMs;
    private boolean polling;

    WaveSteps(String job, Path stateRoot, Path appliedFile, long pollMs, long timeoutMs) {
        this.job = job;
        this.dir = stateRoot.resolve(job);
        this.appliedFile = appliedFile;
        this.pollMs = pollMs;
        this.timeoutMs = timeoutMs;
    }

    Path executionFile() {
        return dir.resolve("execution.json");
    }

    private Path stopFile() {
        return dir.resolve("STOP");
    }

    /** The follow-up: soon while a wave runs (to see it complete), else {@code otherwise}. */
    Instant followup(Instant otherwise) {
        Instant soon = Instant.now().plusMillis(pollMs);
        return polling && soon.isBefore(otherwise) ? soon : otherwise;
    }

    /** The schedule taken on after the applied version (running, stopped or failed), or null. */
    Rollout open(Applied applied) throws IOException {
        Rollout r = Rollout.read(executionFile());
        if (r == null || !r.jobId.equals(job) || (applied != null && r.version <= applied.version())) {
            return null;
        }
        return r;
    }

    /** Start {@code m}'s waves from {@code running}; the assignment to hand out now. */
    Map<String, String> start(Manifest m, Map<String, String> running, Applied applied,
                              Rollout previous, Map<String, Map<String, Long>> lags)
            throws IOException {
        Rollout r = new Rollout(job, m.version(), m.planId(), Instant.now().toString(),
            m.schedule().maxBytesPerSecond(), Rollout.rebase(m, running), running);
        LOG.info("reconf: job {} starts the {} wave(s) of v{} (from {})", job, r.plan.size(),
            m.version(), previous != null ? "the partial assignment of v" + previous.version
                : applied == null ? "the default assignor" : "v" + applied.version());
        if (consumeStop()) {
            return stopped(r);
        }
        if (r.plan.isEmpty()) {
            return done(r, applied);
        }
        return handOut(r, lags);
    }

    /** One rebalance during wave {@code r.current}; the assignment to hand out now. */
    Map<String, String> step(Rollout r, Applied applied, Map<String, Map<String, Long>> lags)
            throws IOException {
        List<Schedule.Move> wave = r.plan.get(r.current - 1);
        List<String> up = new ArrayList<>();
        List<String> down = new ArrayList<>();
        for (Schedule.Move m : wave) {
            Long lag = lags.getOrDefault(m.dst(), Map.of()).get(m.task());
            (lag != null && lag == RUNNING ? up : down).add(m.task());
        }
        long now = System.currentTimeMillis();
        double seconds = (now - r.handedOutMs) / 1000.0;
        if (down.isEmpty()) {
            if (r.upMs == 0) {
                r.upMs = now;
            }
            double bytes = bytes(wave, up);
            double transfer = (r.upMs - r.handedOutMs) / 1000.0;
            if (r.rate != null && seconds < bytes / r.rate) {
                polling = true;  // the byte rate: wait out the rest of the wave's time
                r.write(executionFile());
                return r.assignment;
            }
            r.runs.add(new Rollout.Run(r.current, up, bytes, seconds, List.of(),
                r.changelogRecords, r.rate == null ? null : transfer));
            LOG.info("reconf: job {}: wave {} of {} of v{} runs ({} task(s) moved in {} s)", job,
                r.current, r.plan.size(), r.version, up.size(), String.format("%.1f", transfer));
            if (r.current == r.plan.size()) {
                return done(r, applied);
            }
            if (consumeStop()) {
                return stopped(r);
            }
            return handOut(r, lags);
        }
        if (now - r.handedOutMs > timeoutMs) {
            Map<String, String> back = new TreeMap<>(r.assignment);
            Set<String> nodes = lags.keySet();
            for (Schedule.Move m : wave) {
                if (down.contains(m.task()) && nodes.contains(m.src())) {
                    back.put(m.task(), m.src());
                }
            }
            r.runs.add(new Rollout.Run(r.current, up, bytes(wave, up), seconds, down,
                r.changelogRecords, r.rate == null ? null : seconds));
            r.status = "failed";
            r.assignment = back;
            r.write(executionFile());
            LOG.warn("reconf: job {}: wave {} of {} of v{} failed: task(s) {} not RUNNING on their"
                + " new instance within {} ms; they go back to their source, the {} that came up"
                + " stay moved; the next published version starts from this partial assignment",
                job, r.current, r.plan.size(), r.version, down, timeoutMs, up.size());
            return back;
        }
        polling = true;
        r.write(executionFile());
        return r.assignment;
    }

    /** The wave's instances left the group: the schedule ends failed (the assignor then falls
     * back to Kafka's assignor over the instances that remain, as for any lost instance). */
    void failGone(Rollout r, Set<String> gone) throws IOException {
        List<Schedule.Move> wave = r.plan.get(r.current - 1);
        List<String> failed = wave.stream().map(Schedule.Move::task).toList();
        double seconds = (System.currentTimeMillis() - r.handedOutMs) / 1000.0;
        r.runs.add(new Rollout.Run(r.current, List.of(), 0.0, seconds, failed, r.changelogRecords,
            r.rate == null ? null : seconds));
        r.status = "failed";
        r.write(executionFile());
        LOG.warn("reconf: job {}: wave {} of {} of v{} failed: node(s) {} left the group", job,
            r.current, r.plan.size(), r.version, gone);
    }

    private Map<String, String> handOut(Rollout r, Map<String, Map<String, Long>> lags)
            throws IOException {
        List<Schedule.Move> wave = r.plan.get(r.current);
        Map<String, String> next = new TreeMap<>(r.assignment);
        long records = 0;
        for (Schedule.Move m : wave) {
            next.put(m.task(), m.dst());
            Long lag = lags.getOrDefault(m.dst(), Map.of()).get(m.task());
            records += lag != null && lag > 0 ? lag : 0;
        }
        r.current += 1;
        r.assignment = next;
        r.handedOutMs = System.currentTimeMillis();
        r.upMs = 0;
        r.changelogRecords = records;
        r.write(executionFile());
        polling = true;
        LOG.info("reconf: job {} hands out wave {} of {} of v{}: {} task(s) move ({} changelog"
            + " records to restore): {}", job, r.current, r.plan.size(), r.version, wave.size(),
            records, wave.stream().map(m -> m.task() + " " + m.src() + "->" + m.dst()).toList());
        return next;
    }

    private Map<String, String> stopped(Rollout r) throws IOException {
        r.status = "stopped";
        r.write(executionFile());
        LOG.info("reconf: job {} stopped the waves of v{} on request after wave {} of {}: the"
            + " partial assignment keeps running until a newer version", job, r.version,
            r.runs.size(), r.plan.size());
        return r.assignment;
    }

    private Map<String, String> done(Rollout r, Applied applied) throws IOException {
        int rebalances = applied == null ? 1 : applied.rebalances() + 1;
        new Applied(r.version, r.assignment, r.planId, System.currentTimeMillis(), rebalances)
            .write(appliedFile);
        r.status = "done";
        r.write(executionFile());
        LOG.info("reconf: applied v{} of job {} in {} wave(s)", r.version, job, r.plan.size());
        return r.assignment;
    }

    private boolean consumeStop() throws IOException {
        return Files.deleteIfExists(stopFile());
    }

    private static double bytes(List<Schedule.Move> wave, List<String> tasks) {
        return wave.stream().filter(m -> tasks.contains(m.task()))
            .mapToDouble(Schedule.Move::stateBytes).sum();
    }
}
