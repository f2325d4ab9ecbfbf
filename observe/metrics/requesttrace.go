package metrics

// RequestTraceEventTypes are the record types of Dynamo's request trace.
var RequestTraceEventTypes = []string{"request_end", "request_payload", "tool_start", "tool_end", "tool_error"}

// RequestTrace are the families of the consumer of Dynamo's request-trace
// records (run --source dynamo): what came, what was refused, and the
// transport's counters as for LLM_RESPONSES.
type RequestTrace struct {
	Records   *CounterVec // decoded, by event type
	Malformed *CounterVec // dead-lettered, by decode reason
	// PartialTails counts request_end hashes dropped as a partial block's.
	PartialTails                                *Counter
	AckErrors, ConsumerRecreated, MaxDeliveries *Counter
	ExpiredUnread                               *Counter
}

func newRequestTrace(f *Families) *RequestTrace {
	b := builder{&f.set}
	return &RequestTrace{
		Records: b.vec("hintstream_request_trace_records_total", "event", "Dynamo request-trace records decoded, by event type (counted on each delivery).", RequestTraceEventTypes...),
		Malformed: b.vec("hintstream_request_trace_malformed_total", "reason", "Dynamo request-trace records dead-lettered and terminated because they can never be processed, by decode reason.",
			ReasonMalformed, "record too large", "unsupported schema", "unknown event_type", "too many sequence hashes", "unknown worker"),
		PartialTails:      b.counter("hintstream_request_trace_partial_tails_total", "request_end records whose last sequence hash was a partial block's, dropped (no KV event names it)."),
		AckErrors:         b.counter("hintstream_request_trace_ack_errors_total", "Acks of request-trace records that JetStream did not confirm (the record will come back)."),
		ConsumerRecreated: b.counter("hintstream_request_trace_consumer_recreated_total", "Times the durable request-trace consumer was found deleted and created again."),
		MaxDeliveries:     b.counter("hintstream_request_trace_max_deliveries_total", "Request-trace records that ran out of deliveries and were copied to the dead-letter subject."),
		ExpiredUnread:     b.counter("hintstream_request_trace_expired_unread_total", "Request-trace records that aged out of their stream before any member handled them."),
	}
}
