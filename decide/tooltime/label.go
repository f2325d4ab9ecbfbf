package tooltime

// Other is the metric label of a tool name the Learner does not track:
// new past MaxTools, or longer than MaxNameLen. Tool names come from
// responses, so a label taken straight from them would let any client
// create series without bound.
const Other = "other"

// Label returns the metric label for tool: tool itself when the Learner
// tracks it (or it is "", no tool), Other otherwise. At most MaxTools+2
// distinct labels come out of one Learner.
func (l *Learner) Label(tool string) string {
	if tool == "" {
		return ""
	}
	l.mu.Lock()
	_, ok := l.tools[tool]
	l.mu.Unlock()
	if !ok {
		return Other
	}
	return tool
}
