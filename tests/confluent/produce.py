"""What the producer scripts share: records produced to the broker, partitions alternating,
and each produced row printed as a JSON line for the test to check answers against."""

import json

from confluent_kafka import Producer
from confluent_kafka.serialization import MessageField, SerializationContext


def produce(bootstrap, topic, count, record):
    """Produces `count` records; `record(n, context)` gives the n-th value's bytes and its row."""
    producer = Producer({"bootstrap.servers": bootstrap})
    context = SerializationContext(topic, MessageField.VALUE)
    rows = []
    for n in range(count):
        value, row = record(n, context)
        partition = n % 2
        producer.produce(topic, value=value, partition=partition)
        rows.append(dict(row, partition=partition))
    producer.flush(30)
    for row in rows:
        print(json.dumps(row))
