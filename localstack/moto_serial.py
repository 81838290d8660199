"""moto_server handling one request at a time.

moto's TransactWriteItems snapshots every table it touches and restores the snapshot when the
transaction fails, which also undoes any write another request thread committed in between.
DynamoDB serializes transactions and never undoes another request's write; handling one
request at a time gives moto the same guarantee.

Connections still get a thread each: with one thread for everything, a client's idle
connection (an HTTP pool opens them ahead of need) held the server in a read for ever while
the requests on every other connection waited behind it. So each thread reads its request's
whole body first, and only the handling of the request takes the lock. Arguments are
moto_server's.
"""
import io
import sys
import threading

import werkzeug.serving

_run_simple = werkzeug.serving.run_simple
_handling = threading.Lock()


def _serialized(app):
    def handle(environ, start_response):
        stream = environ["wsgi.input"]
        if environ.get("wsgi.input_terminated"):
            body = stream.read()
        else:
            body = stream.read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("wsgi.input_terminated", None)
        with _handling:
            result = app(environ, start_response)
            try:
                return [b"".join(result)]
            finally:
                if hasattr(result, "close"):
                    result.close()

    return handle


def _one_request_at_a_time(host, port, application, *args, **kwargs):
    kwargs["threaded"] = True
    return _run_simple(host, port, _serialized(application), *args, **kwargs)


werkzeug.serving.run_simple = _one_request_at_a_time

from moto.server import main  # noqa: E402  (imported after the patch on purpose)

if __name__ == "__main__":
    main(sys.argv[1:])
