package webhook

import (
	"strconv"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
)

// The count of failures before sending forgets the deliveries it has
// not seen for a while (another dispatcher took them), so that it does
// not grow with every delivery a long outage touched; those seen lately
// keep their count.
func TestUnsentForgetsOldDeliveries(t *testing.T) {
	is := is.New(t)
	var u unsent
	start := time.Unix(0, 0)
	for i := range unsentPruneAt {
		u.add(imagegen.WebhookDelivery{TaskID: strconv.Itoa(i)}, start, time.Hour)
	}
	recent := imagegen.WebhookDelivery{TaskID: "recent"}
	u.add(recent, start.Add(2*time.Hour), time.Hour)
	is.Equal(len(u.by), 1) // the old ones were dropped when the map was full
	is.Equal(u.add(recent, start.Add(2*time.Hour), time.Hour), 2)
	u.reset(recent)
	is.Equal(u.add(recent, start.Add(2*time.Hour), time.Hour), 1)
}
