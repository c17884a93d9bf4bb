// Package storetest is the conformance suite for imagegen.Store. Every
// store runs it from its own tests, on fresh stores made by a NewFunc:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Harness {
//			clock := imagegentest.NewClock(time.Time{})
//			store, err := memory.New(memory.Config{Clock: clock, Retention: time.Hour})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return storetest.Harness{
//				Store:     store,
//				Advance:   clock.Advance,
//				Retention: time.Hour,
//			}
//		})
//	}
//
// Nothing in the suite knows the backend; a behaviour that applies to all
// stores is tested here and only here.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/imagegen/imagegen"
)

// Harness is one fresh store under test.
type Harness struct {
	Store imagegen.Store
	// Advance moves the store's time forward by d: its clock, and for a
	// backend with server-side expiry, the server's time too. It may be
	// called while other goroutines use the store (as
	// ConcurrentStressKeepsTheRules does), though never by two at once.
	Advance func(d time.Duration)
	// Retention is the store's configured retention of finished tasks.
	Retention time.Duration
	// Sharded says that the store spreads owners over shards, each with
	// its own queue (the Redis store on a Cluster): fair share, claim
	// order across owners, model caps and queue positions then hold
	// within each shard, and the cases that check them across owners
	// of different shards are skipped.
	Sharded bool
	// KeepsChargedIDs says that the store refuses the id of a task
	// retention has removed, as it refuses a live one's (its ledger keeps
	// each charge's reference unique per owner: the memory store,
	// PostgreSQL). The Redis store keeps no trace of it; the Service never
	// asks a store for such an id (imagegen.TaskRetainer).
	KeepsChargedIDs bool
}

// NewFunc returns a fresh, empty store. It registers its own cleanup
// with t.Cleanup.
type NewFunc func(t *testing.T) Harness

// Run runs every conformance test as a subtest of t.
func Run(t *testing.T, newStore NewFunc) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"CreateTaskDebitsAndQueues", testCreateTask},
		{"RecreateOfATaskIDChargesNothing", testRecreateOfATaskIDChargesNothing},
		{"InsufficientCreditsChangeNothing", testInsufficientCredits},
		{"ConcurrentSubmitsNeverOverdraw", testConcurrentSubmits},
		{"OnlyTheOwnerSeesATask", testOwnership},
		{"ClaimOldestReadyFirst", testClaimOrder},
		{"ClaimTasksTakesUpToNInOrder", testClaimTasks},
		{"ClaimedTaskIsTheStoredTask", testClaimedTaskIsTheStoredTask},
		{"CompleteWithBytes", testCompleteWithBytes},
		{"ConcurrentClaimsTakeEachTaskOnce", testConcurrentClaims},
		{"FairShareAcrossOwners", acrossShards(testFairShare)},
		{"NewOwnerWaitsOneTurn", testNewOwnerWaitsOneTurn},
		{"ClaimTasksInterleavesOwners", acrossShards(testClaimTasksInterleavesOwners)},
		{"OwnerWeights", testOwnerWeights},
		{"RecoveredTasksTakeTurns", acrossShards(testRecoveredTasksTakeTurns)},
		{"RetriedTaskKeepsItsTurn", acrossShards(testRetriedTaskKeepsItsTurn)},
		{"LongRunningTaskKeepsNoOneBack", acrossShards(testLongRunningTaskKeepsNoOneBack)},
		{"OwnerCap", acrossShards(testOwnerCap)},
		{"ModelCap", acrossShards(testModelCap)},
		{"RacingClaimersKeepCaps", acrossShards(testRacingClaimers)},
		{"CapsCountTasksClaimedWithoutCaps", acrossShards(testCapsCountUncappedClaims)},
		{"ModelRate", testModelRate},
		{"ModelPause", testModelPause},
		{"PausedModelListedWithoutTasks", testPausedModelListed},
		{"PausedModelHoldsNoOneBack", testHeldModelHoldsNoOneBack("Paused")},
		{"CappedModelHoldsNoOneBack", testHeldModelHoldsNoOneBack("Capped")},
		{"RatedModelHoldsNoOneBack", testHeldModelHoldsNoOneBack("Rated")},
		{"PausedModelNewcomerWaitsOneTurn", testHeldModelNewcomerWaitsOneTurn("Paused")},
		{"CappedModelNewcomerWaitsOneTurn", testHeldModelNewcomerWaitsOneTurn("Capped")},
		{"RatedModelNewcomerWaitsOneTurn", testHeldModelNewcomerWaitsOneTurn("Rated")},
		{"RetriedBacklogHoldsNoOneBack", testRetriedBacklogHoldsNoOneBack},
		{"DelayedRetriesHoldNoOneBack", testDelayedRetriesHoldNoOneBack},
		{"OwnerAtCapHoldsNoOneBack", testOwnerAtCapHoldsNoOneBack},
		{"PassedOverOwnerResumesOldestFirst", acrossShards(testPassedOverOwnerResumesOldestFirst)},
		{"PassedOverOwnerKeepsItsOrder", testPassedOverOwnerKeepsItsOrder},
		{"PassedOverTaskCancelled", testPassedOverTaskCancelled},
		{"PassedOverTasksInPlace", acrossShards(testPassedOverTasksInPlace)},
		{"MaxPending", acrossShards(testMaxPending)},
		{"MaxPendingThroughTransitions", testMaxPendingThroughTransitions},
		{"MaxPendingThroughBatchedClaims", testMaxPendingThroughBatchedClaims},
		{"FencingTokenGuardsEveryFinish", testFencing},
		{"ExpiredLeaseIsReclaimed", testLeaseExpiry},
		{"RenewedLeaseIsKept", testLeaseRenewal},
		{"EndedLeaseIsNotRenewed", testEndedLeaseIsNotRenewed},
		{"ProgressOfTheHolder", testProgress},
		{"SeedAtFinish", testSeedAtFinish},
		{"MaxAttemptsFailsAndRefunds", testMaxAttempts},
		{"RecoveryReportsWhatItMoved", testRecoveryReport},
		{"RecoveryReportsNoRefundForAFreeRetry", testRecoveryReportsNoRefundForAFreeRetry},
		{"ConcurrentRecoveriesReportEachFailureOnce", testConcurrentRecoveriesReportEachFailureOnce},
		{"RefundExactlyOnce", testRefundOnce},
		{"RetryWaitsForItsDelay", testRetry},
		{"ReleaseDoesNotUseAnAttempt", testRelease},
		{"CancelPendingOnly", testCancel},
		{"CancelKeepsAStartedCharge", testCancelKeepsAStartedCharge},
		{"FinishRacesEndEachTaskOnce", testFinishRaces},
		{"LedgerRules", testLedger},
		{"LedgerPagesNewestFirst", testLedgerPages},
		{"LedgerSumsToBalanceUnderLoad", testLedgerSumsUnderLoad},
		{"LedgerKeepsLargeAmounts", testLedgerKeepsLargeAmounts},
		{"LargeBalanceRefusalCostsNothing", testLargeBalanceRefusalCostsNothing},
		{"LargeBalanceNeverBelowZero", testLargeBalanceNeverBelowZero},
		{"LargeBalanceChargesSayTheBalance", testLargeBalanceChargesSayTheBalance},
		{"RefundThatWouldOverflowEndsNothing", testRefundThatWouldOverflowEndsNothing},
		{"QueuePositions", acrossShards(testQueuePositions)},
		{"RetentionRemovesFinishedTasksAndImages", testRetention},
		{"FinishedLateStaysListed", testFinishedLateStaysListed},
		{"ImageRecordsKeepEveryField", testImageRecords},
		{"APIKeys", testKeys},
		{"APIKeyLastUse", testKeyLastUse},
		{"ReturnedValuesAreCopies", testCopies},
		{"WatchTaskSeesEveryFinish", testWatch},
		{"IdempotencyKeys", testIdempotency},
		{"IdempotencyLateFinishChangesNothing", testIdempotencyLateFinish},
		{"IdempotencyExpiredInFlightIsSettled", testIdempotencyExpiredInFlight},
		{"ListTasksNewestFirst", testList},
		{"ListScanIsBounded", testListScanIsBounded},
		{"WebhookDeliveries", testWebhooks},
		{"WebhookDeliveriesInDueOrder", testWebhookDueOrder},
		{"WebhookEvents", testWebhookEvents},
		{"WebhookStaleClaimChangesNothing", testWebhookStaleClaim},
		{"WebhookOfARequeuedTaskIsQueuedAfresh", testWebhookOfARequeuedTask},
		{"SharedSecrets", testSharedSecret},
		{"ReplaceSharedSecret", testReplaceSharedSecret},
		{"ConcurrentReplaceSharedSecretOneWins", testConcurrentReplaceSharedSecret},
		{"ConsoleSessions", testSessions},
		{"SessionsPerOwnerBounded", testSessionsPerOwnerBounded},
		{"QueueStats", testQueueStats},
		{"TaskByIDSeesEveryOwner", testTaskByID},
		{"ListAllTasksAcrossOwners", testListAllTasks},
		{"RequeueFailedTask", testRequeue},
		{"RequeueRechargeTwiceAtOneAttempt", testRequeueRechargeTwiceAtOneAttempt},
		{"RequeueRechargeOfAKeptCharge", testRequeueRechargeOfAKeptCharge},
		{"PurgeExpired", testPurgeExpired},
		{"ProviderStatsBuckets", testProviderStats},
		{"ProviderStatsConcurrentAdds", testProviderStatsConcurrent},
		{"RandomOperationsAgreeWithModel", testRandomOperations},
		{"ConcurrentStressKeepsTheRules", testConcurrentStress},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t))
		})
	}
}

var ctx = context.Background()

// acrossShards marks a case that checks an order or a limit across
// owners, which a sharded store keeps within each shard only: it is
// skipped on one.
func acrossShards(fn func(*testing.T, Harness)) func(*testing.T, Harness) {
	return func(t *testing.T, h Harness) {
		if h.Sharded {
			t.Skip("the store is sharded: this order or limit holds within each shard, and the case spans owners of different shards")
		}
		fn(t, h)
	}
}

const lease = 10 * time.Second

// errOf is the error of a FailTask or CancelTask, whose refund the
// check at hand does not look at.
func errOf(_ int64, err error) error { return err }
