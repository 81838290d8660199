"""Produces Protobuf records with Confluent's own serializer (confluent-kafka's
ProtobufSerializer), which registers each schema in the registry it is given (the files it
imports as references, the Google well-known types left out) and frames each value with the
schema id and the message's indexes.

The message types are built at run time from their descriptors (no protoc here):
`geo.proto` (message Geo) and two versions of `edit.proto` (package wiki; Edit, with a
Timestamp, an enum, a Geo, a repeated string and a map; version 2 adds `channel`, and puts a
message before Edit so that Edit's index is [1]). Records alternate between the versions.
Prints each produced row as a JSON line: partition, the fields written and the version.

usage: produce_protobuf.py BOOTSTRAP TOPIC REGISTRY_URL COUNT
"""

import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
from produce import produce

F = descriptor_pb2.FieldDescriptorProto

# 2015-09-12T00:00:00Z, where Druid's Wikipedia sample lives.
DAY = 1442016000


def field(name, number, kind, type_name=None, repeated=False):
    f = F(name=name, number=number, type=kind, label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
    if type_name:
        f.type_name = type_name
    return f


def files(version):
    geo = descriptor_pb2.FileDescriptorProto(name="geo.proto", package="wiki", syntax="proto3")
    geo.message_type.add(name="Geo").field.append(field("country", 1, F.TYPE_STRING))
    edit = descriptor_pb2.FileDescriptorProto(name="edit.proto", package="wiki", syntax="proto3")
    edit.dependency.extend(["geo.proto", "google/protobuf/timestamp.proto"])
    if version == 2:
        edit.message_type.add(name="Before").field.append(field("x", 1, F.TYPE_STRING))
    m = edit.message_type.add(name="Edit")
    m.field.extend([
        field("time", 1, F.TYPE_MESSAGE, ".google.protobuf.Timestamp"),
        field("page", 2, F.TYPE_STRING),
        field("user_name", 3, F.TYPE_STRING),
        field("kind", 4, F.TYPE_ENUM, ".wiki.Edit.Kind"),
        field("geo", 5, F.TYPE_MESSAGE, ".wiki.Geo"),
        field("tags", 6, F.TYPE_STRING, repeated=True),
        field("added", 7, F.TYPE_INT64),
        field("counts", 8, F.TYPE_MESSAGE, ".wiki.Edit.CountsEntry", repeated=True),
    ])
    if version == 2:
        m.field.append(field("channel", 9, F.TYPE_STRING))
    entry = m.nested_type.add(name="CountsEntry")
    entry.options.map_entry = True
    entry.field.extend([field("key", 1, F.TYPE_STRING), field("value", 2, F.TYPE_INT32)])
    kind = m.enum_type.add(name="Kind")
    kind.value.add(name="EDIT", number=0)
    kind.value.add(name="NEW", number=1)
    return geo, edit


def edit_class(version):
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    for f in files(version):
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("wiki.Edit"))


def main():
    bootstrap, topic, registry_url, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    registry = SchemaRegistryClient({"url": registry_url})
    classes = [edit_class(v) for v in (1, 2)]
    serializers = [ProtobufSerializer(c, registry, {"use.deprecated.format": False}) for c in classes]

    def record(n, contexts):
        version = n % 2
        message = classes[version]()
        message.time.seconds = DAY + (n % 3) * 3600
        message.time.nanos = n * 1000000
        message.page = f"page-{n % 5}"
        if n % 4:
            message.user_name = f"user-{n % 3}"
        message.kind = n % 2
        message.geo.country = ["FR", "DE", "JP"][n % 3]
        message.tags.extend([f"t{n % 2}", "all"])
        message.added = n * 1000000000
        message.counts["x"] = n
        row = {
            "ms": (DAY + (n % 3) * 3600) * 1000 + n,
            "page": message.page,
            "userName": message.user_name or None,
            # proto3 leaves a field at its default (here the enum's first value) off the wire:
            # it reads as absent, as in Druid.
            "kind": [None, "NEW"][n % 2],
            "country": message.geo.country,
            "tags": sorted(message.tags),
            "added": message.added,
            "count_x": n,
        }
        if version == 1:
            message.channel = "#fr" if n % 4 == 1 else "#de"
            row["channel"] = message.channel
        return None, serializers[version](message, contexts["value"]), dict(row, version=version + 1)

    produce(bootstrap, topic, count, record)


if __name__ == "__main__":
    main()
