// swift-format-ignore-file: AllPublicDeclarationsHaveDocumentation

// The public methods here are the store protocols' requirements, documented there (`CofferStore/Stores`).
import CofferCore
import Foundation

extension InMemoryStore {
    public func creditLots(owner: UUID, environment: AppStoreEnvironment) -> [CreditLot] {
        lotList.filter { $0.key.owner == owner && $0.key.environment == environment }
            .flatMap(\.value).sorted { ($0.expiresAt, $0.id) < ($1.expiresAt, $1.id) }
    }

    public func expireCredits(environment: AppStoreEnvironment, owner: UUID?, at now: Date, limit: Int) -> Int {
        let due = lotList.filter { $0.key.environment == environment && (owner == nil || $0.key.owner == owner) }
            .flatMap { wallet in wallet.value.map { (wallet.key.environment, wallet.key.owner, $0) } }
        // Soonest to end first, ties by id, as the other engines take them.
        let ordered = due.sorted { ($0.2.expiresAt, $0.2.id) < ($1.2.expiresAt, $1.2.id) }
        let requests = Array(CreditLotWrites.expiries(ordered, at: now).prefix(max(0, limit)))
        let results = requests.map { request in
            (try? LedgerWriter.apply(request, in: &state)) ?? .failure(.unknownUser(request.owner))
        }
        updateLots(requests, results)
        // A lot whose customer the ledger no longer finds ends with nothing to take.
        for (request, result) in zip(requests, results) {
            guard case .failure = result else { continue }
            let wallet = CreditLotWrites.Wallet(
                environment: request.environment, owner: request.owner, currency: request.currency)
            lotList[wallet]?.removeAll { $0.id == request.event.key.id }
        }
        return results.count { if case .success = $0 { true } else { false } }
    }

    /// Keeps the lots true to what `requests` did (`results`), as every engine does in its write.
    func updateLots(_ requests: [LedgerRequest], _ results: [Result<LedgerResult, LedgerError>]) {
        for (wallet, applied) in CreditLotWrites.touched(requests, results) {
            let updated = CreditLots.update(lotList[wallet] ?? [], applied: applied)
            lotList[wallet] = updated.isEmpty ? nil : updated
        }
    }

    /// A merge moves the merged customer's lots with the wallet they are in.
    func moveLots(from: UUID, into: UUID, environment: AppStoreEnvironment) {
        for (wallet, lots) in lotList where wallet.owner == from && wallet.environment == environment {
            lotList[wallet] = nil
            let moved = CreditLotWrites.Wallet(environment: environment, owner: into, currency: wallet.currency)
            lotList[moved, default: []] += lots
        }
    }
}
