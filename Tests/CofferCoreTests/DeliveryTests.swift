import CofferCore
import CofferTestSupport
import Foundation
import Testing

/// What a signed transaction does to the ledger, decided in the core for every caller.
@Suite("Delivery rules")
struct DeliveryTests {
    static let day = Fixture.day

    @Test("a signed transaction asks for its purchase with the catalog's credits, or its revocation when refunded")
    func event() throws {
        let catalog = try Fixture.catalog()
        let paid = Fixture.consumable("t1", quantity: 3)
        #expect(try Delivery.event(for: paid, catalog: catalog) == .purchase(paid, credits: 1_200_000))
        let refunded = Fixture.consumable("t1", revoked: Fixture.start)
        #expect(try Delivery.event(for: refunded, catalog: catalog) == .revocation(refunded))
        let family = Fixture.consumable("t2", family: true)
        #expect(try Delivery.event(for: family, catalog: catalog) == .purchase(family, credits: 0))
        var unknown = paid
        unknown.productId = "com.example.nothing"
        #expect(throws: LedgerError.unknownProduct("com.example.nothing")) {
            _ = try Delivery.event(for: unknown, catalog: catalog)
        }
        // Taking back needs no catalog entry.
        unknown.revocationDate = Fixture.start
        #expect(try Delivery.event(for: unknown, catalog: catalog) == .revocation(unknown))
    }

    @Test("a presented transaction against Apple's kept words: the latest by Apple's signing time decides")
    func presented() {
        let fact = Fixture.consumable("t1")
        let signed = Fixture.start.addingTimeInterval(Self.day)
        let before = Fixture.start
        let after = signed.addingTimeInterval(Self.day)
        // Nothing kept, or only older words: the snapshot decides.
        #expect(
            Delivery.events(forPresented: fact, signedAt: signed, credits: 5, later: []) == [
                .purchase(fact, credits: 5)
            ])
        #expect(
            Delivery.events(
                forPresented: fact, signedAt: signed, credits: 5, later: [.init(kind: .revocation, signedDate: before)])
                == [.purchase(fact, credits: 5)])
        // A later refund takes the purchase back, dated by Apple.
        var revoked = fact
        revoked.revocationDate = after
        #expect(
            Delivery.events(
                forPresented: fact, signedAt: signed, credits: 5, later: [.init(kind: .revocation, signedDate: after)])
                == [.purchase(fact, credits: 5), .revocation(revoked)])
        // A later reversal of a refund the snapshot shows delivers it.
        var snapshotRefunded = fact
        snapshotRefunded.revocationDate = before
        #expect(
            Delivery.events(
                forPresented: snapshotRefunded, signedAt: signed, credits: 5,
                later: [.init(kind: .revocation, signedDate: after), .init(kind: .reversal, signedDate: after)])
                == [.purchase(fact, credits: 5)])
        #expect(Delivery.LaterWord(notificationType: "DID_RENEW", signedDate: after) == nil)
        #expect(Delivery.LaterWord(notificationType: "REVOKE", signedDate: after)?.kind == .revocation)
    }

    @Test("the app's outcome: revoked whenever a revocation is among the events, else by the ledger's answer")
    func outcomes() {
        let fact = Fixture.consumable("t1")
        let purchase = LedgerEvent.purchase(fact, credits: 5)
        #expect(Delivery.outcome(of: [purchase], ledger: .applied) == .delivered)
        #expect(Delivery.outcome(of: [purchase], ledger: .duplicate) == .duplicate)
        #expect(Delivery.outcome(of: [purchase], ledger: .superseded) == .duplicate)
        #expect(Delivery.outcome(of: [purchase], ledger: .revoked) == .revoked)
        #expect(Delivery.outcome(of: [purchase, .revocation(fact)], ledger: .applied) == .revoked)
    }
}
