#!/bin/sh
# A worker whose init_ok names a version of $SIZE bytes (under the 1 MiB a line may have), then grants
# everything (grantloop.sh).
read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p')
v=$(head -c "${SIZE:-921600}" /dev/zero | tr '\0' 'v')
printf '{"type":"init_ok","in_reply_to":%s,"library":"long","version":"%s","kinds":["naive"]}\n' "$id" "$v"
. "$(dirname "$0")/grantloop.sh"
