/// A page that says why something was not done, with a link on.
struct MessagePage: PanelPage {
    static let template = "message"
    var section: PanelSection? { nil }

    /// The heading.
    enum Heading: PanelChoice { case notDone, noSuchUser, notInProduction, notDeleted, notCancelled }
    /// Why, in the panel's words (the template's).
    enum Reason: PanelChoice {
        case staleForm, ownerOnly, formTooLarge, bulkDeleteInSandboxOnly, grantClaimed, grantCancelledAlready
    }
    /// Where the link goes, in words.
    enum LinkText: PanelChoice { case dashboard, users, grants, back }

    var heading: Heading
    var reason: Reason?
    /// Why, in a use case's words (a refusal's message).
    var detail: String?
    var link: String
    var linkText: LinkText

    init(heading: Heading, reason: Reason? = nil, detail: String? = nil, link: String, linkText: LinkText) {
        self.heading = heading
        self.reason = reason
        self.detail = detail
        self.link = link
        self.linkText = linkText
    }
}

/// A hidden field of a confirmation's form: what the action is sent again with.
struct HiddenField: Sendable {
    var name, value: String
}

/// A balance before and after a change, for a confirmation.
struct BeforeAfter: Sendable {
    /// The device wallet's balance is its backup's.
    var backedUp: Bool
    /// The change waits for the app to claim it (a grant).
    var onceClaimed: Bool
    var before, after: String
}

/// The page that asks before a change: what it does, in the template's words for its kind, and a form that
/// sends the action again with `confirm=yes`.
struct ConfirmPage: PanelPage {
    static let template = "confirm"
    var section: PanelSection?
    var action, cancel: String
    var fields: [HiddenField]
    var beforeAfter: BeforeAfter?
    // Exactly one of the kinds below.
    var balanceEdit: BalanceEdit?
    var merge: Merge?
    var deletion: Deletion?
    var grant: Grant?
    var cancelGrant: CancelGrant?
    var deleteAll: DeleteAll?
    var production = false

    init(section: PanelSection?, action: String, cancel: String, fields: [HiddenField]) {
        self.section = section
        self.action = action
        self.cancel = cancel
        self.fields = fields + [HiddenField(name: "confirm", value: "yes")]
    }

    /// Setting a customer's balance.
    struct BalanceEdit: Sendable {
        var supportId, balance, change, reason: String
        var serverWallet: Bool
    }

    /// Merging an anonymous customer into an Apple account customer.
    struct Merge: Sendable {
        var from, fromBalance, fromDeficit: String
        var fromBackup: String?
        var into, intoBalance: String
        var serverWallet: Bool
        /// What happens to the installs' sign-ins (the CLI's words too).
        var tokens: String
    }

    /// Deleting a customer at their request.
    struct Deletion: Sendable {
        var supportId, balance, deficit: String
    }

    /// Granting credits.
    struct Grant: Sendable {
        /// What the credits are: "credits", or another currency's name.
        var supportId, credits, unit: String
        /// When the credits end, in words; `nil` for credits that never do.
        var expiry: String?
        var reason: String
        /// Grants waiting for the app already: how many and their credits.
        var waiting: Waiting?

        struct Waiting: Sendable {
            var count: Int
            var one: Bool
            var credits: String
        }
    }

    /// Cancelling a pending grant.
    struct CancelGrant: Sendable {
        var supportId, credits, createdBy, createdAt, reason: String
    }

    /// Deleting every Sandbox grant.
    struct DeleteAll: Sendable {
        /// A Production server's Sandbox view: only its test customers' grants.
        var sandboxMarkedOnly: Bool
    }
}
