#!/usr/bin/env bash
# verify-codegen.sh regenerates into a temporary copy of the repository and
# fails on any difference from the checked-in generated code and CRD.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# Copy what the generators read and write; leave build caches and VCS data.
tar -C "${REPO_ROOT}" --exclude=.git --exclude=bin --exclude=_output -cf - . | tar -C "${tmp}" -xf -
"${REPO_ROOT}/hack/update-codegen.sh" "${tmp}" >/dev/null

status=0
for path in pkg/apis pkg/generated thirdpartyresource.yaml config; do
    if ! diff -ruN "${REPO_ROOT}/${path}" "${tmp}/${path}"; then
        status=1
    fi
done
if [ "${status}" -ne 0 ]; then
    echo "generated code is out of date: run 'make generate'" >&2
    exit 1
fi
echo "generated code is up to date"
