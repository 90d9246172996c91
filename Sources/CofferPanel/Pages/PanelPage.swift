import CofferAdmin
import CofferCore
import CofferHTTP
import CofferService
import CofferStore
import HTTPTypes
import Mustache

/// A page of the panel: the facts its template shows, typed. The words are the template's (`Panel/*.mustache`);
/// a page model carries numbers, names, times and flags, never sentences.
protocol PanelPage: Sendable {
    /// The template's name in `Panel/`.
    static var template: String { get }
    /// The tab of the navigation the page sits under.
    var section: PanelSection? { get }
}

/// The tabs of the panel's navigation.
enum PanelSection: Sendable {
    case dashboard, users, grants, audit, admins, settings, webhooks
}

/// What the layout shows around every page: the environment, the signed-in admin, the CSRF token for its forms,
/// the navigation, a notice and an error.
struct PanelFrame: Sendable {
    var environment: String
    var isProduction: Bool
    var isSandbox: Bool
    var adminName: String?
    var csrf: String?
    var isOwner: Bool
    var onDashboard = false
    var onUsers = false
    var onGrants = false
    var onAudit = false
    var onAdmins = false
    var onSettings = false
    var onWebhooks = false
    var notice: PanelNotice?
    var error: String?

    init(
        environment: AppStoreEnvironment, session: AdminSession?, isOwner: Bool, section: PanelSection?,
        notice: PanelNotice?, error: String?
    ) {
        self.environment = environment.rawValue
        isProduction = environment == .production
        isSandbox = environment == .sandbox
        adminName = session?.adminName
        csrf = session?.csrfToken
        self.isOwner = isOwner
        self.notice = notice
        self.error = error
        switch section {
        case .dashboard: onDashboard = true
        case .users: onUsers = true
        case .grants: onGrants = true
        case .audit: onAudit = true
        case .admins: onAdmins = true
        case .settings: onSettings = true
        case .webhooks: onWebhooks = true
        case nil: break
        }
    }
}

/// A page inside its frame, as the templates read it: a name is looked up in the page's model first, then in
/// the frame.
struct FramedPage: MustacheParent {
    let page: any PanelPage
    let frame: PanelFrame

    func child(named name: String) -> Any? {
        for mirror in [Mirror(reflecting: page), Mirror(reflecting: frame)] {
            if let found = mirror.children.first(where: { $0.label == name }) { return Self.unwrapped(found.value) }
        }
        return nil
    }

    /// A value, or what an `Optional` holds (`nil` for none), so an absent value hides its section.
    static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first?.value
    }
}

/// A notice at the top of a page after an action (`?notice=` on the redirect), or a page's standing note. The
/// layout's `notice` partial holds the words: `{{#granted}}...{{/granted}}` shows when this is `.granted`.
enum PanelNotice: String, PanelChoice {
    case granted
    case balance
    case deleted
    case cancelled
    case settings
    case twoFactorOff = "two-factor-off"
    case role
    case disabled
    case enabled
    case twoFactorReset = "two-factor-reset"
    case customerDeleted = "customer-deleted"
    case merged
    case extended
    case extendedAll = "extended-all"
    case entitlementGranted = "entitlement-granted"
    case webhookRemoved = "webhook-removed"
    case webhookRotated = "webhook-rotated"
    case webhookResent = "webhook-resent"
    /// Not from a redirect: two-factor sign-in was turned on just now.
    case twoFactorOn
    /// Not from a redirect: a Production server's Sandbox view lists only its Sandbox-marked customers.
    case sandboxMarkedView

    /// The notice a redirect's `?notice=` names; `nil` for any other text.
    init?(query: String?) {
        guard let query, let notice = Self(rawValue: query), notice != .twoFactorOn, notice != .sandboxMarkedView
        else { return nil }
        self = notice
    }
}

/// One of a few cases whose words are the template's: inside `{{#value}}`, `{{#caseName}}...{{/caseName}}` shows
/// for the case the value is, and no other.
protocol PanelChoice: CaseIterable, Equatable, Sendable, MustacheParent {}

extension PanelChoice {
    /// `true` for this case's name, `false` for another case's, `nil` for any other name (looked up further out).
    func child(named name: String) -> Any? {
        Self.allCases.first { "\($0)" == name }.map { $0 == self }
    }
}

/// Why a panel action did not happen, as the page shows it: the words and the status. Every refusal of a use
/// case reaches a page through ``init(_:)``, with the status the admin API answers with.
struct PanelFailure: Error, Sendable {
    /// What went wrong, for support.
    var message: String
    /// The page's status.
    var status: HTTPResponse.Status

    init(_ message: String, status: HTTPResponse.Status = .badRequest) {
        self.message = message
        self.status = status
    }

    /// The failure an error of the use cases or the rules means; `nil` for any other error (a fault, answered
    /// as one).
    init?(_ error: any Error) {
        switch error {
        case let failure as PanelFailure: self = failure
        case let error as AdminError: self.init(error.description, status: ServiceError(error).status)
        case let error as SupportRuleError: self.init(error.description)
        default: return nil
        }
    }
}
