# Sourced by the test workers after their init_ok: grant and set everything at once (readers share, so with
# only readers it is a correct read lock), and refuse a request without a positive thread as the protocol
# says (error 12). It also logs its wall clock (date, through libc) on stderr for each request: the
# client-clock fault must show.
while read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"msg_id":\([0-9]*\).*/\1/p')
	type=$(printf '%s' "$line" | sed -n 's/.*"type":"\([a-z_]*\)".*/\1/p')
	thread=$(printf '%s' "$line" | sed -n 's/.*"thread":\([0-9]*\).*/\1/p')
	echo "clock $(date +%s)" >&2
	if [ -z "$thread" ] || [ "$thread" -le 0 ]; then
		printf '{"type":"error","in_reply_to":%s,"code":12,"text":"thread must be a positive integer"}\n' "$id"
	else
		printf '{"type":"%s_ok","in_reply_to":%s,"granted":true,"set":true,"value":2}\n' "$type" "$id"
	fi
done
