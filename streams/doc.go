// Package streams creates or attaches the JetStream streams hintstream
// consumes from and publishes to, and names the subjects on them.
//
// The contract with operators is that an existing stream's configuration
// is never changed silently: Ensure attaches to what is there, reports
// what differs, and only adds missing subjects when told to with
// WithUpdate(true).
package streams
