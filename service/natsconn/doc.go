// Package natsconn turns an operator's NATS connection settings (URL,
// credentials, TLS) into nats.go options, so hintstream can join a secured
// bus the way the nats CLI and other NATS clients do.
//
// Supported authentication, one method at a time: a .creds file (user JWT
// and nkey seed, as issued by nsc), an nkey seed file, user and password, or
// a token. TLS is independent of it: a CA bundle to verify the server and,
// for mutual TLS, a client certificate and key.
//
// Secrets (passwords, tokens, seeds, keys) never appear in errors or logs.
package natsconn
