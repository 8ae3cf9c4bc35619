# Sourced by the test workers: answer init with init_ok as library $LIB, for lock kind $KINDS (default naive).
read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p')
printf '{"type":"init_ok","in_reply_to":%s,"library":"%s","version":"0","kinds":["%s"]}\n' "$id" "$LIB" "${KINDS:-naive}"
