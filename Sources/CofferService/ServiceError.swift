import CofferAdmin
import CofferAppStore
import CofferCore
import Foundation

/// What went wrong with a request to Coffer's application layer, named by what it means, with the code the API
/// answers it with and an explanation. The services throw these or the typed errors of the layers below
/// (``LedgerError``, ``VerificationError``, ``AdminError``, ``AdminAuthError``), which ``init(_:)`` maps; the
/// HTTP edge turns them into answers in one place.
public enum ServiceError: Error, Sendable, Equatable {
    /// The request is malformed: a parameter, a header or the body.
    case badRequest(String)
    /// The body is larger than the route takes.
    case bodyTooLarge(limit: Int)
    /// A write to `/v1/admin` that does not name its environment.
    case environmentRequired
    /// No valid credentials (a bearer token, the metrics token).
    case unauthorized(String)
    /// A signed admin request that does not verify; `code` says why (`stale`, `replayed`, ...).
    case adminSignature(code: String, message: String)
    /// Support's action is not allowed here.
    case forbidden(String)
    /// The transaction belongs to another user.
    case wrongUser
    /// Nothing of this kind by that name.
    case notFound(String)
    /// The user has no backup yet.
    case noBackup
    /// Support cancelled the grant before the app claimed it: nothing is credited.
    case grantCancelled
    /// An imported customer was claimed by another install (409 `already-claimed`).
    case alreadyClaimed
    /// The catalog does not sell the product.
    case unknownProduct(String)
    /// Apple's Sandbox data presented for a customer whose own AppTransaction says Production (422
    /// `sandbox-data-for-production-customer`): any TestFlight tester makes Sandbox purchases for free.
    case sandboxDataForProductionCustomer
    /// The ledger refused the change.
    case ledger(LedgerError)
    /// Apple's signed data does not verify; `code` is Apple's word for why (`INVALID_ENVIRONMENT`, ...).
    case verification(code: String, message: String)
    /// The change needs the server wallet.
    case deviceWallet
    /// Support's balance edit named a balance that is no longer the customer's (409 `balance-changed`).
    case balanceChanged(String)
    /// Too many requests of this kind from the client's address; it may try again after `retryAfter` seconds.
    case rateLimited(retryAfter: Int, what: String)
    /// The user has as many event streams open as allowed.
    case tooManyStreams(Int)
    /// Something the request needs is not available now (Apple's certificate status, a free Support ID, the
    /// event stream capacity); `code` names it.
    case unavailable(code: String, message: String)
    /// The request took longer than its deadline.
    case timeout(seconds: Int)
    /// Something that must not happen did.
    case internalError(String)

    /// Maps the typed errors of the layers below; anything else is an internal error.
    public init(_ error: any Error) {
        self = Self(named: error) ?? .internalError("the server could not do that now")
    }

    /// Maps the typed errors of the layers below; `nil` for an error none of them names (one to log).
    public init?(named error: any Error) {
        switch error {
        case let error as ServiceError: self = error
        case let error as LedgerError: self = .ledger(error)
        case let error as OfferError:
            switch error {
            case .unknownProduct: self = .unknownProduct(error.description)
            case .notASubscription, .invalidOfferIdentifier: self = .badRequest(error.description)
            case .unknownOffer: self = .notFound(error.description)
            }
        case let error as VerificationError:
            if case .retryableVerificationFailure = error {
                self = .unavailable(code: error.status, message: error.message)
            } else {
                self = .verification(code: error.status, message: error.message)
            }
        case let error as AdminError:
            switch error {
            case .notFound: self = .notFound(error.description)
            case .invalid(let why): self = .badRequest(why)
            case .forbidden(let why): self = .forbidden(why)
            case .unavailable(let why): self = .unavailable(code: "unavailable", message: why)
            case .changed(let why): self = .balanceChanged(why)
            }
        case let error as AdminAuthError: self = .adminSignature(code: Self.code(error), message: error.description)
        case StoreError.unavailable:
            self = .unavailable(
                code: "database-unavailable",
                message: "the database did not answer in time or cannot write now; nothing was changed that was not "
                    + "committed: try again (a change already committed answers as a duplicate)")
        default: return nil
        }
    }

    /// The error's code in the API's answer (`{"error": {"code", "message"}}`).
    public var code: String {
        switch self {
        case .badRequest: "bad-request"
        case .bodyTooLarge: "body-too-large"
        case .environmentRequired: "environment-required"
        case .unauthorized: "unauthorized"
        case .adminSignature(let code, _), .verification(let code, _), .unavailable(let code, _): code
        case .forbidden: "forbidden"
        case .wrongUser, .ledger(.wrongUser): "wrong-user"
        case .notFound: "not-found"
        case .noBackup: "no-backup"
        case .grantCancelled: "grant-cancelled"
        case .alreadyClaimed: "already-claimed"
        case .unknownProduct: "unknown-product"
        case .sandboxDataForProductionCustomer: "sandbox-data-for-production-customer"
        case .ledger(.insufficientBalance): "insufficient-balance"
        case .ledger(.keyReused): "key-reused"
        case .ledger(.unknownUser): "try-again"
        case .ledger: "refused"
        case .deviceWallet: "device-wallet"
        case .balanceChanged: "balance-changed"
        case .tooManyStreams: "too-many-streams"
        case .rateLimited: "rate-limited"
        case .timeout: "timeout"
        case .internalError: "internal"
        }
    }

    /// The explanation, for people.
    public var message: String {
        switch self {
        case .badRequest(let why), .unauthorized(let why), .forbidden(let why), .notFound(let why),
            .unknownProduct(let why), .internalError(let why), .balanceChanged(let why):
            why
        case .bodyTooLarge(let limit): "the body is larger than \(limit) bytes"
        case .environmentRequired:
            "a write must name its environment: add ?environment=Sandbox or ?environment=Production"
        case .adminSignature(_, let message), .verification(_, let message), .unavailable(_, let message): message
        case .wrongUser, .ledger(.wrongUser): "the transaction belongs to another user"
        case .noBackup: "no backup yet"
        case .sandboxDataForProductionCustomer:
            "this is Apple's Sandbox data (TestFlight, App Review, sandbox testers); a customer whose app was "
                + "installed from the App Store receives only Production purchases"
        case .grantCancelled: "support cancelled this grant before it was claimed; nothing was credited"
        case .alreadyClaimed: "another install claimed this customer; support can merge the two (Support IDs)"
        case .ledger(.insufficientBalance(let balance, let requested)): "\(requested) requested, \(balance) available"
        case .ledger(.keyReused): "this Idempotency-Key was used for another amount"
        case .ledger(let error): error.description
        case .deviceWallet: "the app owns the balance in the device wallet"
        case .tooManyStreams(let count): "this user has \(count) event streams open; close one first"
        case .rateLimited(_, let what): "too many \(what) from this address; try again later"
        case .timeout(let seconds): "the request took longer than \(seconds) seconds; try again"
        }
    }

    /// Whether Apple's data was refused as not verifying here (it never will: retrying cannot help).
    public var isVerificationRefusal: Bool {
        if case .verification = self { true } else { false }
    }

    /// A bearer token is missing or unknown.
    public static let noBearer = ServiceError.unauthorized("a valid bearer token is required")

    static func code(_ error: AdminAuthError) -> String {
        switch error {
        case .unsigned: "unsigned"
        case .unknownKey: "unknown-key"
        case .revokedKey: "revoked-key"
        case .badKey: "bad-key"
        case .malformedDate: "bad-date"
        case .stale: "stale"
        case .badSignature: "bad-signature"
        case .replayed: "replayed"
        }
    }
}
