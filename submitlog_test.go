package imagegen_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
)

// submitLog is a SubmitLogger that records what it is told and takes it
// or declines it.
type submitLog struct {
	take bool
	told []string
}

func (l *submitLog) LogSubmitted(taskID, model string, cost int64) bool {
	l.told = append(l.told, taskID+" "+model)
	return l.take
}

// A task submitted under WithRequest is the SubmitLogger's to log: the
// service writes no "task submitted" line when the SubmitLogger takes
// it, and writes it, with the request id, when it declines or when the
// context has only a request id.
func TestSubmitLoggerTakesTheSubmittedLine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		log      *submitLog // nil: WithRequestID alone
		wantLine bool
	}{
		{"taken", &submitLog{take: true}, false},
		{"declined", &submitLog{}, true},
		{"request id alone", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var logs bytes.Buffer
			f := newFixture(t, imagegentest.NewModel(1), logTo(&logs))
			f.funded(t, "alice", 5)
			rctx := imagegen.WithRequestID(ctx, "req-7")
			if tc.log != nil {
				rctx = imagegen.WithRequest(ctx, "req-7", tc.log)
			}
			sub, err := f.svc.Submit(rctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a fox"})
			is.NoErr(err)
			is.Equal(f.task(t, "alice", sub.TaskID).RequestID, "req-7") // the id reaches the task either way
			if tc.log != nil {
				is.Equal(len(tc.log.told), 1)
				is.True(strings.HasPrefix(tc.log.told[0], sub.TaskID+" ")) // told the task and its model
			}
			line := strings.Contains(logs.String(), `"msg":"task submitted"`)
			is.Equal(line, tc.wantLine)
			if line {
				is.True(strings.Contains(logs.String(), `"request_id":"req-7"`))
			}
		})
	}
}
