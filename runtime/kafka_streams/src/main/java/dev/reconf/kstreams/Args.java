package dev.reconf.kstreams;

import java.util.HashMap;
import java.util.Map;

/** {@code --key value} and bare {@code --flag} arguments of the module's mains. */
final class Args {
    private Args() {
    }

    static Map<String, String> parse(String[] argv) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < argv.length; i++) {
            if (!argv[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name, got '" + argv[i] + "'");
            }
            String key = argv[i].substring(2);
            if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
                out.put(key, argv[++i]);
            } else {
                out.put(key, "true");
            }
        }
        return out;
    }
}
