"""What the producer scripts share: records produced to the broker, partitions alternating,
and each produced row printed as a JSON line for the test to check answers against."""

import json

from confluent_kafka import Producer
from confluent_kafka.serialization import MessageField, SerializationContext


def produce(bootstrap, topic, count, record):
    """Produces `count` records; `record(n, contexts)` gives the n-th key's bytes (or None), its
    value's and its row; `contexts` are the serializers' for the key and the value."""
    producer = Producer({"bootstrap.servers": bootstrap})
    contexts = {"key": SerializationContext(topic, MessageField.KEY), "value": SerializationContext(topic, MessageField.VALUE)}
    rows = []
    for n in range(count):
        key, value, row = record(n, contexts)
        partition = n % 2
        producer.produce(topic, key=key, value=value, partition=partition)
        rows.append(dict(row, partition=partition))
    producer.flush(30)
    for row in rows:
        print(json.dumps(row))
