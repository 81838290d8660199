#!/usr/bin/env bash
# Creates the S3 bucket and the DynamoDB table Sluice uses locally. LocalStack runs this hook
# when it is ready (docker-compose mounts this folder); localstack/up.sh runs it against the
# emulators it starts. Idempotent.
set -euo pipefail
bucket="${SLUICE_BUCKET:-sluice-local}"
table="${SLUICE_TABLE:-sluice-local}"
if command -v awslocal >/dev/null 2>&1; then
  aws() { awslocal "$@"; }
else
  aws() { command aws --endpoint-url "${AWS_ENDPOINT_URL:-http://127.0.0.1:4566}" "$@"; }
fi
if ! aws s3api head-bucket --bucket "$bucket" >/dev/null 2>&1; then
  aws s3api create-bucket --bucket "$bucket" >/dev/null
fi
if ! aws dynamodb describe-table --table-name "$table" >/dev/null 2>&1; then
  aws dynamodb create-table --table-name "$table" \
    --attribute-definitions AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
    --key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
    --billing-mode PAY_PER_REQUEST >/dev/null
  aws dynamodb update-time-to-live --table-name "$table" \
    --time-to-live-specification Enabled=true,AttributeName=expires_at >/dev/null
fi
echo "bucket $bucket and table $table ready" >&2
