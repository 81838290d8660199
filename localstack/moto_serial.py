"""moto_server answering one request at a time.

moto's TransactWriteItems snapshots every table it touches and restores the snapshot when the
transaction fails, which also undoes any write another request thread committed in between.
DynamoDB serializes transactions and never undoes another request's write; a single request
thread gives moto the same guarantee. Arguments are moto_server's.
"""
import sys

import werkzeug.serving

_run_simple = werkzeug.serving.run_simple


def _one_thread(*args, **kwargs):
    kwargs["threaded"] = False
    return _run_simple(*args, **kwargs)


werkzeug.serving.run_simple = _one_thread

from moto.server import main  # noqa: E402  (imported after the patch on purpose)

if __name__ == "__main__":
    main(sys.argv[1:])
