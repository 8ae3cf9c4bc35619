# Sourced by the misbehaving test workers: answer init with init_ok for the naive kind, as library $LIB.
read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p')
printf '{"type":"init_ok","in_reply_to":%s,"library":"%s","version":"0","kinds":["naive"]}\n' "$id" "$LIB"
