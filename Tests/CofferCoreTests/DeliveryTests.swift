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

    @Test(
        "Apple's word on an owned transaction: a refund takes back, a reversal restores and delivers one never delivered"
    )
    func words() {
        let fact = Fixture.consumable("t1")
        let said = Fixture.start.addingTimeInterval(Self.day)
        var revoked = fact
        revoked.revocationDate = said
        #expect(
            Delivery.events(for: .init(kind: .revocation, signedDate: said), on: fact, credits: 5) == [
                .revocation(revoked)
            ])
        // Apple's own revocation date is kept.
        var dated = fact
        dated.revocationDate = Fixture.start
        #expect(
            Delivery.events(for: .init(kind: .revocation, signedDate: said), on: dated, credits: nil) == [
                .revocation(dated)
            ])
        let reversal = Delivery.LaterWord(kind: .reversal, signedDate: said)
        #expect(Delivery.events(for: reversal, on: dated, credits: nil) == [.reversal(fact, at: said)])
        #expect(
            Delivery.events(for: reversal, on: dated, credits: 5) == [
                .reversal(fact, at: said), .purchase(fact, credits: 5),
            ])
        // Ordered by Apple's time; at one instant the reversal comes after the refund.
        let refund = Delivery.LaterWord(kind: .revocation, signedDate: said)
        #expect(refund < reversal)
        #expect(!(reversal < refund))
        #expect(Delivery.LaterWord(kind: .reversal, signedDate: Fixture.start) < refund)
    }

    @Test("the device wallet's mailbox: Apple's words on held purchases, adjustments limited to what the balance holds")
    func mirrored() throws {
        let catalog = try Fixture.catalog()
        let fact = Fixture.consumable("t1")
        let at = Fixture.start.addingTimeInterval(Self.day)
        var receipt = Receipt(owner: Fixture.owner, transaction: fact)
        receipt.deliveredCredits = 400_000
        func mirror(_ kind: LedgerEntryKind?, _ amount: Int64, _ receipt: Receipt?, balance: Int64) -> [LedgerEvent] {
            Delivery.mirrored(
                kind: kind, key: "k", amount: amount, reason: "why", at: at, receipt: receipt, balance: balance,
                catalog: catalog)
        }
        var revoked = fact
        revoked.revocationDate = at
        #expect(mirror(.revocation, -400_000, receipt, balance: 10) == [.revocation(revoked)])
        // A refund of a purchase this install never held takes what the balance has.
        #expect(mirror(.revocation, -400_000, nil, balance: 10) == [.adjustment(id: "k", delta: -10, reason: "why")])
        #expect(mirror(.revocation, -400_000, nil, balance: 0) == [])
        #expect(mirror(.adjustment, 25, nil, balance: 0) == [.adjustment(id: "k", delta: 25, reason: "why")])
        #expect(mirror(nil, -25, nil, balance: 100) == [.adjustment(id: "k", delta: -25, reason: "why")])
        // A reversal restores a revoked purchase; one refunded before delivery is delivered too.
        receipt.revokedAt = at
        #expect(mirror(.reversal, 400_000, receipt, balance: 0) == [.reversal(fact, at: at)])
        receipt.deliveredCredits = nil
        #expect(
            mirror(.reversal, 400_000, receipt, balance: 0) == [
                .reversal(fact, at: at), .purchase(fact, credits: 400_000),
            ])
        // A reversal of a purchase that is not revoked here is an adjustment.
        receipt.revokedAt = nil
        #expect(mirror(.reversal, 5, receipt, balance: 0) == [.adjustment(id: "k", delta: 5, reason: "why")])
    }

    @Test("the app's outcome: revoked when Apple's last word among the events is a revocation, else by the ledger")
    func outcomes() {
        let fact = Fixture.consumable("t1")
        let purchase = LedgerEvent.purchase(fact, credits: 5)
        #expect(Delivery.outcome(of: [purchase], ledger: .applied) == .delivered)
        #expect(Delivery.outcome(of: [purchase], ledger: .duplicate) == .duplicate)
        #expect(Delivery.outcome(of: [purchase], ledger: .superseded) == .duplicate)
        #expect(Delivery.outcome(of: [purchase], ledger: .revoked) == .revoked)
        #expect(Delivery.outcome(of: [purchase, .revocation(fact)], ledger: .applied) == .revoked)
        #expect(
            Delivery.outcome(of: [purchase, .revocation(fact), .reversal(fact, at: nil)], ledger: .applied)
                == .delivered)
    }
}
