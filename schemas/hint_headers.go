package schemas

// Hint headers a frontend forwards from the HTTP request into a request
// event's headers map (lower-case names; LookupHeader also finds mixed
// case); hintstream also reads them as NATS message headers. Every
// package that writes or reads them (the client, the engine, the pins,
// the simulator, the load tests) names them from here.
const (
	// HeaderWakeup marks a request that is not a turn but a thread being
	// opened (the user opened it; answer at once): the trigger of a
	// wake-up prefetch of the prompt's KV on the chosen worker.
	HeaderWakeup = "x-dynamo-experimental-wakeup"
	// HeaderSimToolCall announces that the response will end in a tool
	// call: its response is pinned even if it does not end in one, and a
	// positive integer value is the expected tool time in ms (a tool
	// name: time unknown).
	HeaderSimToolCall = "x-dynamo-experimental-sim-tool-call"
)

// HeaderDeadLetterReason carries, on a dead-lettered copy, the short
// reason it was refused: the consumers' dead-letter middleware and the
// agent-event bridge both set it, so one filter finds every copy.
const HeaderDeadLetterReason = "Hintstream-Error"
