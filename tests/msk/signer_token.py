"""Prints the MSK IAM token AWS's own signer library (aws-msk-iam-sasl-signer-python) makes for
the given credentials, region and signing time, as JSON: {"token": ..., "expires_ms": ...,
"user_agent": ...}. The clock is fixed by patching botocore's, which the library signs with.

usage: signer_token.py REGION ACCESS_KEY_ID SECRET_ACCESS_KEY SESSION_TOKEN|- EPOCH_SECONDS
"""

import datetime
import json
import sys
from unittest import mock

from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
from botocore.credentials import CredentialProvider, Credentials


class Fixed(CredentialProvider):
    def __init__(self, credentials):
        super().__init__()
        self.credentials = credentials

    def load(self):
        return self.credentials


def main():
    region, key, secret, token, epoch = sys.argv[1:6]
    credentials = Credentials(key, secret, None if token == "-" else token)
    at = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).replace(tzinfo=None)
    with mock.patch("botocore.auth.get_current_datetime", return_value=at):
        signed, expires_ms = MSKAuthTokenProvider.generate_auth_token_from_credentials_provider(region, Fixed(credentials))
    user_agent = MSKAuthTokenProvider.__dict__["__get_user_agent__"]()
    print(json.dumps({"token": signed, "expires_ms": expires_ms, "user_agent": user_agent}))


if __name__ == "__main__":
    main()
