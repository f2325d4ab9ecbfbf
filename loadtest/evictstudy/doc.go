// Package evictstudy replays a workload's page accesses at the shared L3
// store (Mooncake, modelled by sim.L3Store) under several eviction
// policies, to say how much of the gap between LRU and the clairvoyant
// order (Belady) an online policy could close at equal capacity.
//
// The model is the one sim.Cluster applies to L3: for each request in
// time order the store is looked up for the prompt's full pages from the
// first one on, and the hit stops at the first miss (a KV prefix is only
// reusable up to its first missing page); then every full page of the
// prompt is written through. A page's key is its whole prefix (as
// Mooncake's keys are), so a page id that recurs under another prefix is
// another page.
//
// Belady here may decline to keep a written page (it keeps, after each
// request, the Cap pages of the store and the prompt whose next use comes
// first, deeper pages going first on a tie). Its store is then closed
// under prefixes, so its per-page hits are its prefix hits, and no policy
// can have more prefix hits than it has per-page hits: it is an upper
// bound for every policy here, admission filters included.
//
// Every other policy sees only the past, except the oracle next-turn
// pins (NextTurnPins), which bound what pinning announced next turns
// could add. The study is offline: it says what an eviction order could
// gain, not how hintstream would reach it. Command evictstudy prints the
// tables; RESULTS.md holds them and what they show.
package evictstudy
