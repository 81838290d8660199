"""Produces Avro records with Confluent's own serializer (confluent-kafka's AvroSerializer),
which registers each schema in the registry it is given and frames each value with its id.

Two versions of one subject's schema are used in one run (the second adds a field with a
default, and takes a named type from another subject by a schema reference), records
alternating between them; keys are Avro strings. Prints each produced row as a JSON line:
partition, the fields written and the schema version.

usage: produce_avro.py BOOTSTRAP TOPIC REGISTRY_URL COUNT
"""

import json
import sys

from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from produce import produce

V1 = {
    "type": "record", "name": "Edit", "namespace": "wiki",
    "fields": [
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "page", "type": "string"},
        {"name": "user", "type": ["null", "string"], "default": None},
        {"name": "geo", "type": {"type": "record", "name": "Geo", "fields": [{"name": "country", "type": "string"}]}},
        {"name": "added", "type": "int"},
    ],
}
# Version 2 adds a field with a default, and names wiki.Geo, registered on its own under the
# subject wiki.Geo, as a schema reference instead of defining it.
GEO = V1["fields"][3]["type"]
V2 = dict(V1, fields=[f if f["name"] != "geo" else dict(f, type="wiki.Geo") for f in V1["fields"]]
          + [{"name": "channel", "type": "string", "default": "#en"}])

# 2015-09-12T00:00:00Z, where Druid's Wikipedia sample lives.
DAY = 1442016000000


def main():
    bootstrap, topic, registry_url, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    registry = SchemaRegistryClient({"url": registry_url})
    registry.register_schema("wiki.Geo", Schema(json.dumps(dict(GEO, namespace="wiki")), "AVRO"))
    v2 = Schema(json.dumps(V2), "AVRO", [SchemaReference("wiki.Geo", "wiki.Geo", 1)])
    serializers = [AvroSerializer(registry, json.dumps(V1)), AvroSerializer(registry, v2)]
    # Keys are Avro strings, registered under the topic's key subject.
    key_serializer = AvroSerializer(registry, '"string"')

    def record(n, contexts):
        version = n % 2
        row = {
            "ts": DAY + (n % 3) * 3600000 + n,
            "page": f"page-{n % 5}",
            "user": None if n % 4 == 0 else f"user-{n % 3}",
            "geo": {"country": ["FR", "DE", "JP"][n % 3]},
            "added": n,
        }
        if version == 1:
            row["channel"] = "#fr" if n % 4 == 1 else "#de"
        key = f"key-{n % 7}"
        value = serializers[version](row, contexts["value"])
        return key_serializer(key, contexts["key"]), value, dict(row, version=version + 1, key=key)

    produce(bootstrap, topic, count, record)


if __name__ == "__main__":
    main()
