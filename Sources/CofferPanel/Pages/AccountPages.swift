import CofferAPI
import CofferAdmin
import CofferCore
import CofferStore
import Foundation

/// `/admin/login`: the name and password.
struct LoginPage: PanelPage {
    static let template = "login"
    var section: PanelSection? { nil }
    var loginCsrf, name: String
    /// `panel.remote` is on: the page says to serve it behind TLS.
    var remote: Bool
}

/// `/admin/login/code`: the second step of a sign-in with two-factor on.
struct CodePage: PanelPage {
    static let template = "login-code"
    var section: PanelSection? { nil }
    var codeCsrf, name: String
}

/// `/admin/settings`: the admin's time zone, two-factor sign-in, role and grant limit.
struct SettingsPage: PanelPage {
    static let template = "settings"
    var section: PanelSection? { .settings }
    var zones: [Zone]
    var example: String
    var twoFactorOn: Bool
    var recoveryCodesLeft: Int
    var role: String
    /// `nil` for no limit (an owner).
    var grantLimit: String?
    /// Whether the admin is an owner (who keeps the webhooks' endpoints).
    var isOwner = false
    /// The webhooks' endpoints (owners').
    var webhooks: [WebhookEndpointRow] = []
    /// Every event type, for the new endpoint's choice.
    var eventTypes: [String] = WebhookEventType.allCases.map(\.rawValue)

    struct Zone: Sendable {
        var name: String
        var selected: Bool
    }
}

/// Turning two-factor sign-in on: the key to add (`setup`), then the recovery codes, shown once.
struct TwoFactorPage: PanelPage {
    static let template = "two-factor"
    var section: PanelSection? { .settings }
    var setup: Bool
    var secret = ""
    var typedKey = ""
    var authenticatorURL = ""
    var codes: [String] = []

    /// The setup page for `secret`.
    init(secret: String, admin: String) {
        setup = true
        self.secret = secret
        typedKey = TwoFactor.typedKey(secret)
        authenticatorURL = TwoFactor.authenticatorURL(secret: secret, admin: admin)
    }

    /// The recovery codes.
    init(codes: [String]) {
        setup = false
        self.codes = codes
    }
}

/// `/admin/admins` (owners): every admin, and a form for a new one.
struct AdminsPage: PanelPage {
    static let template = "admins"
    var section: PanelSection? { .admins }
    var admins: [Row]
    /// The admin just created, with the password shown once.
    var created: Created?

    struct Created: Sendable {
        var role, name, password: String
    }

    struct Row: Sendable {
        var name, path: String
        var owner: Bool
        var support: Bool
        var role, limit, grantLimit: String
        var twoFactor: Bool
        var recoveryCodesLeft: Int
        var canReset: Bool
        var disabled: Bool
        var guessed: Guessed?
        var canDisable: Bool
        var created: String
    }

    /// Two-factor codes guessed at in the last hour, and whether sign-ins with a code wait.
    struct Guessed: Sendable {
        var count: Int
        var one: Bool
        var waiting: Bool
    }

    init(_ admins: [AdminView], guessed: [String: Int], signedIn: String?, created: Created?, time: (Date) -> String) {
        self.created = created
        self.admins = admins.map { admin in
            Row(
                name: admin.name, path: URLText.escape(admin.name), owner: admin.role == .owner,
                support: admin.role == .support, role: admin.role.rawValue,
                limit: admin.grantLimit.map { String($0) } ?? "", grantLimit: PanelText.credits(admin.grantLimit ?? 0),
                twoFactor: admin.twoFactor, recoveryCodesLeft: admin.recoveryCodesLeft,
                canReset: admin.twoFactor && admin.name != signedIn, disabled: admin.disabledAt != nil,
                guessed: guessed[admin.name].map {
                    Guessed(count: $0, one: $0 == 1, waiting: $0 >= AccountGuard.codeLimit)
                }, canDisable: admin.disabledAt == nil && admin.name != signedIn, created: time(admin.createdAt))
        }
    }
}

/// `/admin/audit`: the newest events matching the filter, and a CSV link for all.
struct AuditPage: PanelPage {
    static let template = "audit"
    var section: PanelSection? { .audit }
    var events: [Event] = []
    var admin = ""
    var customer = ""
    var action = ""
    var csv = "/admin/audit.csv"
    var filtered = false

    struct Event: Sendable {
        var at, actor, action, subject, before, after: String
    }

    /// The page for a filter that was refused.
    init() {}

    init(_ events: [AuditEvent], query: AuditQuery, time: (Date) -> String) {
        self.events = events.map { event in
            Event(
                at: time(event.at), actor: event.actor, action: event.action, subject: event.subject,
                before: event.before ?? "", after: event.after ?? "")
        }
        admin = query.admin ?? ""
        customer = query.subject ?? ""
        action = query.action ?? ""
        let filters = [("admin", query.admin), ("customer", query.subject), ("action", query.action)]
            .compactMap { name, value in value.map { "\(name)=\(URLText.escape($0))" } }
        if !filters.isEmpty { csv += "?" + filters.joined(separator: "&") }
        filtered = !filters.isEmpty
    }
}
