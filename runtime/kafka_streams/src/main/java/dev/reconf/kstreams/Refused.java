package dev.reconf.kstreams;

import java.nio.file.Path;

/**
 * A published assignment the assignor will not apply: the Java twin of runtime/client.py's
 * {@code AssignmentRefused} family. {@link #kind} is the Python subclass name (CorruptManifest,
 * ChecksumMismatch, StaleVersion, UnknownKeygroups, MissingKeygroups, UnknownNodes,
 * TerminatedNodeInUse), so the shared test vectors compare both clients by name.
 */
public final class Refused extends Exception {
    private static final long serialVersionUID = 1L;
    public final String kind;
    public final Path path;

    public Refused(String kind, Path path, String message) {
        super(path + ": " + message);
        this.kind = kind;
        this.path = path;
    }
}
