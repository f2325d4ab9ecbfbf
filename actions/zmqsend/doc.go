// Package zmqsend delivers hints (actions.Hint) over ZeroMQ PUSH sockets
// to worker schedulers and the Mooncake master: an actions.Sender.
//
// Pool.Send only enqueues. Each endpoint has one goroutine, socket and
// bounded queue, so a worker that is down never delays hints to the
// others; a hint is dropped at its deadline, never sent late. The pool
// bounds its sockets (WithMaxEndpoints, closing idle ones), settles a
// hint only after ZeroMQ took it, and can speak CURVE.
package zmqsend
