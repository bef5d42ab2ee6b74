"""reconf on Kafka Streams (docs/runtime.md, "Kafka Streams"): the Maven module beside this file
(ReconfTaskAssignor, the flights application, the broker's jars) and the Python side that starts
a single-node KRaft broker and the application's instances, and lands their statistics."""
