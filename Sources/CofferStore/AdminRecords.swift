import CofferCore
import Foundation

/// What an admin may do.
public enum AdminRole: String, Sendable, Hashable, Codable, CaseIterable {
    /// Everything: balances, merges, cleanup, admins and their roles.
    case owner
    /// Support: reads every page, grants up to the limit an owner set, cancels pending grants.
    case support
}

/// A person who signs in to the admin panel.
public struct Admin: Sendable, Hashable, Codable {
    /// The admin's id.
    public var id: UUID
    /// The sign-in name, unique.
    public var name: String
    /// The password's bcrypt hash (the password itself is never stored).
    public var passwordHash: String
    /// When the admin was created.
    public var createdAt: Date
    /// When the password was last set.
    public var passwordChangedAt: Date
    /// The time zone the panel shows times in beside UTC (an IANA identifier such as `Europe/Paris`); `nil`
    /// shows UTC only.
    public var timeZone: String?
    /// What the admin may do.
    public var role: AdminRole
    /// For support: the most credits one grant may carry (0 or `nil`: no grants). Owners have no limit.
    public var grantLimit: Int64?
    /// The shared secret of two-factor sign-in (TOTP), `nil` while it is off.
    public var twoFactorSecret: String?
    /// The last 30-second step whose code signed in, so no code works twice.
    public var twoFactorLastStep: Int64?
    /// SHA-256 hashes of the recovery codes not used yet.
    public var recoveryCodeHashes: [String]
    /// When an owner took the admin off (``AdminStore/updateAdmin(name:_:)`` ends their sessions in the same
    /// transaction); `nil` while the admin may sign in.
    public var disabledAt: Date?

    /// Creates an admin record.
    public init(
        id: UUID = UUID(), name: String, passwordHash: String, createdAt: Date, passwordChangedAt: Date? = nil,
        timeZone: String? = nil, role: AdminRole = .owner, grantLimit: Int64? = nil, twoFactorSecret: String? = nil,
        twoFactorLastStep: Int64? = nil, recoveryCodeHashes: [String] = [], disabledAt: Date? = nil
    ) {
        self.id = id
        self.name = name
        self.passwordHash = passwordHash
        self.createdAt = createdAt
        self.passwordChangedAt = passwordChangedAt ?? createdAt
        self.timeZone = timeZone
        self.role = role
        self.grantLimit = grantLimit
        self.twoFactorSecret = twoFactorSecret
        self.twoFactorLastStep = twoFactorLastStep
        self.recoveryCodeHashes = recoveryCodeHashes
        self.disabledAt = disabledAt
    }

    /// This admin with what ``AdminStore/updateAdmin(name:_:)`` may change taken from `changed` (time zone, role,
    /// grant limit, two-factor, whether it is disabled); the id, name, password and creation dates stay.
    public func adopting(_ changed: Admin) -> Admin {
        var adopted = self
        adopted.disabledAt = changed.disabledAt
        adopted.timeZone = changed.timeZone
        adopted.role = changed.role
        adopted.grantLimit = changed.grantLimit
        adopted.twoFactorSecret = changed.twoFactorSecret
        adopted.twoFactorLastStep = changed.twoFactorLastStep
        adopted.recoveryCodeHashes = changed.recoveryCodeHashes
        return adopted
    }

    /// Whether the admin may sign in (an owner has not disabled them).
    public var isEnabled: Bool { disabledAt == nil }

    /// Whether this admin counts as an owner: an owner who is not disabled.
    public var isActiveOwner: Bool { role == .owner && isEnabled }

    /// Whether sign-in asks for a code after the password.
    public var hasTwoFactor: Bool { twoFactorSecret != nil }

    /// The most credits one grant by this admin may carry: `nil` for no limit (an owner).
    public var grantCeiling: Int64? { role == .owner ? nil : max(0, grantLimit ?? 0) }

    /// The admin having signed in with the code of `step`: `nil` when that step (or a later one) was used
    /// already, so a code seen over a shoulder does not sign in twice.
    public func using(step: Int64) -> Admin? {
        if let last = twoFactorLastStep, step <= last { return nil }
        var used = self
        used.twoFactorLastStep = step
        return used
    }

    /// The admin having used the recovery code with this hash: `nil` when it is not one of theirs (or was used).
    public func using(recoveryCodeHash hash: String) -> Admin? {
        guard let index = recoveryCodeHashes.firstIndex(of: hash) else { return nil }
        var used = self
        used.recoveryCodeHashes.remove(at: index)
        return used
    }
}

/// A signed-in panel session. The cookie carries a secret; the store keeps only its hash.
public struct AdminSession: Sendable, Hashable, Codable {
    /// A hash of the session secret.
    public var tokenHash: String
    /// The admin signed in.
    public var adminId: UUID
    /// The admin's name, for the audit log.
    public var adminName: String
    /// The token every form of this session must carry.
    public var csrfToken: String
    /// The environment the panel shows; changed by the environment switcher.
    public var environment: AppStoreEnvironment
    /// When the session began.
    public var createdAt: Date
    /// When it ends.
    public var expiresAt: Date
    /// Whether the password was right but the two-factor code is still to come: such a session opens only the
    /// code page.
    public var twoFactorPending: Bool

    /// Creates a session record.
    public init(
        tokenHash: String, adminId: UUID, adminName: String, csrfToken: String, environment: AppStoreEnvironment,
        createdAt: Date, expiresAt: Date, twoFactorPending: Bool = false
    ) {
        self.twoFactorPending = twoFactorPending
        self.tokenHash = tokenHash
        self.adminId = adminId
        self.adminName = adminName
        self.csrfToken = csrfToken
        self.environment = environment
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// A public key allowed to sign admin API requests; its private half stays with the CLI.
public struct AdminKey: Sendable, Hashable, Codable {
    /// The key id sent with each request.
    public var id: String
    /// A name for people, e.g. "support laptop".
    public var name: String
    /// The P-256 public key, PEM.
    public var publicKeyPEM: String
    /// When the key was created.
    public var createdAt: Date
    /// When the key was revoked, `nil` while it is valid.
    public var revokedAt: Date?
    /// What requests signed with it may do, as an admin's role: keys made before roles are owners'.
    public var role: AdminRole
    /// For a support key: the most credits its grants may carry over a rolling 24 hours.
    public var grantLimit: Int64?

    /// Creates a key record.
    public init(
        id: String, name: String, publicKeyPEM: String, createdAt: Date, revokedAt: Date? = nil,
        role: AdminRole = .owner, grantLimit: Int64? = nil
    ) {
        self.id = id
        self.name = name
        self.publicKeyPEM = publicKeyPEM
        self.createdAt = createdAt
        self.revokedAt = revokedAt
        self.role = role
        self.grantLimit = grantLimit
    }

    /// Who the key's grants count against: its name and id.
    public var holder: String { "\(name) (key \(id))" }

    /// The most credits its grants may carry over a rolling day: `nil` for an owner key.
    public var grantCeiling: Int64? { role == .owner ? nil : max(0, grantLimit ?? 0) }
}

/// A backup as it was written, for a user's timeline.
public struct BackupHistoryItem: Sendable, Hashable, Codable {
    /// How many of a user's backups every store keeps (the newest); older ones are dropped as new ones are
    /// written, so an app backing up in a loop cannot grow the database without bound.
    public static let kept = 100

    /// The record written.
    public var record: BackupRecord
    /// The value it replaced, `nil` for the first.
    public var previousValue: Int64?

    /// Creates a history item.
    public init(record: BackupRecord, previousValue: Int64?) {
        self.record = record
        self.previousValue = previousValue
    }
}

/// The dashboard's figures for one environment.
public struct DashboardFigures: Sendable, Hashable, Codable {
    /// Users (on a Production server, not App Review's or TestFlight's sandbox accounts).
    public var users: Int
    /// Grants waiting for the app.
    public var pendingGrants: Int
    /// Grants the app picked up.
    public var claimedGrants: Int
    /// Purchases delivered.
    public var purchases: Int
    /// Purchases refunded or revoked (and not reversed).
    public var refunds: Int
    /// Users who owe credits.
    public var usersInDeficit: Int
    /// The credits owed, summed.
    public var outstandingDeficit: Int64
    /// Purchases and refunds per UTC day, oldest first, one item per day of the window (zeros included).
    public var days: [DayFigures]
    /// Purchases delivered whose data came from the other environment: on a Production server, App Review's
    /// and TestFlight's sandbox purchases. They are left out of every other figure and of ``days``.
    public var otherEnvironmentPurchases: Int
    /// What Apple's price fields say customers paid for the purchases delivered in the window, per UTC day of
    /// delivery, product and currency (purchases Apple's data gave no price for are left out).
    public var revenue: [MoneyFigures] = []
    /// What the refunds recorded in the window (and standing now) had paid, per UTC day of the refund, product
    /// and currency.
    public var refunded: [MoneyFigures] = []
    /// Subscriptions whose paid or trial period has not ended and that are not refunded, once per subscription
    /// (Apple's original transaction).
    public var activeSubscriptions: Int = 0
    /// Customers who have earned each subscription group's loyalty lifetime, by group.
    public var loyaltyLifetimes: [GroupCount] = []
    /// Customers whose own AppTransaction says the other environment: on a Production server, App Review's and
    /// TestFlight's Sandbox installs. Left out of ``users``, shown beside it so nothing is hidden.
    public var otherEnvironmentCustomers: Int = 0
    /// Credits delivered by purchases whose data came from the other environment (standing, not refunded).
    public var otherEnvironmentCredits: Int64 = 0
    /// Subscriptions from the other environment's data whose period has not ended and that are not refunded:
    /// the entitlements they keep active.
    public var otherEnvironmentSubscriptions: Int = 0
    /// The catalog's other currencies' deficits (the default currency's are ``usersInDeficit`` and
    /// ``outstandingDeficit``): for each currency some customer owes, how many owe it and how much, by currency id.
    public var currencyDeficits: [CurrencyDeficit] = []

    /// Creates the figures.
    public init(
        users: Int, pendingGrants: Int, claimedGrants: Int, purchases: Int, refunds: Int, usersInDeficit: Int,
        outstandingDeficit: Int64, days: [DayFigures], otherEnvironmentPurchases: Int = 0
    ) {
        self.users = users
        self.pendingGrants = pendingGrants
        self.claimedGrants = claimedGrants
        self.purchases = purchases
        self.refunds = refunds
        self.usersInDeficit = usersInDeficit
        self.outstandingDeficit = outstandingDeficit
        self.days = days
        self.otherEnvironmentPurchases = otherEnvironmentPurchases
    }
}

/// One of the catalog's other currencies' deficits on the dashboard.
public struct CurrencyDeficit: Sendable, Hashable, Codable {
    /// The currency, by its catalog id.
    public var currency: String
    /// Customers who owe it.
    public var usersInDeficit: Int
    /// What they owe, summed.
    public var outstandingDeficit: Int64

    /// Creates a currency's deficit figures.
    public init(currency: String, usersInDeficit: Int, outstandingDeficit: Int64) {
        self.currency = currency
        self.usersInDeficit = usersInDeficit
        self.outstandingDeficit = outstandingDeficit
    }
}

/// Money of one UTC day, product and currency.
public struct MoneyFigures: Sendable, Hashable, Codable {
    /// The day's start (00:00 UTC).
    public var day: Date
    /// The product.
    public var productId: String
    /// The currency (ISO 4217).
    public var currency: String
    /// Purchases counted.
    public var count: Int
    /// Their prices summed, in milliunits of the currency.
    public var amount: Int64

    /// Creates a day's money figures.
    public init(day: Date, productId: String, currency: String, count: Int, amount: Int64) {
        self.day = day
        self.productId = productId
        self.currency = currency
        self.count = count
        self.amount = amount
    }

    /// Money figures from an engine's grouped row, with the day as days since 1970.
    public init(dayNumber: Int64, productId: String, currency: String, count: Int64, amount: Int64) {
        self.init(
            day: Date(timeIntervalSince1970: TimeInterval(dayNumber * DashboardFigures.secondsPerDay)),
            productId: productId, currency: currency, count: Int(count), amount: amount)
    }
}

/// How many of something one group has.
public struct GroupCount: Sendable, Hashable, Codable {
    /// The group.
    public var group: String
    /// How many.
    public var count: Int

    /// Creates a count.
    public init(group: String, count: Int) {
        self.group = group
        self.count = count
    }
}

/// Purchases and refunds of one UTC day.
public struct DayFigures: Sendable, Hashable, Codable {
    /// The day's start (00:00 UTC).
    public var day: Date
    /// Purchases delivered that day.
    public var purchases: Int
    /// Refunds and revocations recorded that day.
    public var refunds: Int

    /// Creates a day's figures.
    public init(day: Date, purchases: Int, refunds: Int) {
        self.day = day
        self.purchases = purchases
        self.refunds = refunds
    }
}

extension DashboardFigures {
    /// Decodes the figures; those an older server does not send (money, subscriptions, loyalty) are empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            users: try container.decode(Int.self, forKey: .users),
            pendingGrants: try container.decode(Int.self, forKey: .pendingGrants),
            claimedGrants: try container.decode(Int.self, forKey: .claimedGrants),
            purchases: try container.decode(Int.self, forKey: .purchases),
            refunds: try container.decode(Int.self, forKey: .refunds),
            usersInDeficit: try container.decode(Int.self, forKey: .usersInDeficit),
            outstandingDeficit: try container.decode(Int64.self, forKey: .outstandingDeficit),
            days: try container.decode([DayFigures].self, forKey: .days),
            otherEnvironmentPurchases: try container.decodeIfPresent(Int.self, forKey: .otherEnvironmentPurchases) ?? 0)
        revenue = try container.decodeIfPresent([MoneyFigures].self, forKey: .revenue) ?? []
        refunded = try container.decodeIfPresent([MoneyFigures].self, forKey: .refunded) ?? []
        activeSubscriptions = try container.decodeIfPresent(Int.self, forKey: .activeSubscriptions) ?? 0
        loyaltyLifetimes = try container.decodeIfPresent([GroupCount].self, forKey: .loyaltyLifetimes) ?? []
        otherEnvironmentCustomers = try container.decodeIfPresent(Int.self, forKey: .otherEnvironmentCustomers) ?? 0
        otherEnvironmentCredits = try container.decodeIfPresent(Int64.self, forKey: .otherEnvironmentCredits) ?? 0
        otherEnvironmentSubscriptions =
            try container.decodeIfPresent(Int.self, forKey: .otherEnvironmentSubscriptions) ?? 0
        currencyDeficits = try container.decodeIfPresent([CurrencyDeficit].self, forKey: .currencyDeficits) ?? []
    }

    /// The name a loyalty lifetime's milestone starts with; the group follows.
    public static let loyaltyMilestonePrefix = "loyalty:"

    /// Purchases delivered in the window.
    public var windowPurchases: Int { days.reduce(0) { $0 + $1.purchases } }

    /// Refunds recorded in the window.
    public var windowRefunds: Int { days.reduce(0) { $0 + $1.refunds } }

    /// Refunds in the window for each purchase delivered in it (0 when nothing was delivered).
    public var refundRate: Double {
        windowPurchases == 0 ? 0 : Double(windowRefunds) / Double(windowPurchases)
    }

    /// Money figures summed by `key` (counts and amounts, saturating), ordered by currency then key.
    public static func totals<Key: Hashable & Comparable>(
        _ figures: [MoneyFigures], by key: (MoneyFigures) -> Key
    ) -> [(key: Key, currency: String, count: Int, amount: Int64)] {
        var sums: [KeyAndCurrency<Key>: (count: Int, amount: Int64)] = [:]
        for figure in figures {
            let slot = KeyAndCurrency(key: key(figure), currency: figure.currency)
            let sum = sums[slot] ?? (0, 0)
            let (amount, overflow) = sum.amount.addingReportingOverflow(figure.amount)
            sums[slot] = (sum.count + figure.count, overflow ? .max : amount)
        }
        return sums.map { (key: $0.key.key, currency: $0.key.currency, count: $0.value.count, amount: $0.value.amount) }
            .sorted { ($0.currency, $0.key) < ($1.currency, $1.key) }
    }

    /// Seconds in a day.
    public static let secondsPerDay: Int64 = 86_400

    /// The first day (00:00 UTC) of a window of `days` days ending with the day of `now`.
    public static func windowStart(days: Int, endingAt now: Date) -> Date {
        let today = Milliseconds.seconds(now) / secondsPerDay
        return Date(timeIntervalSince1970: TimeInterval((today - Int64(days) + 1) * secondsPerDay))
    }

    /// One item per day from `start` for `days` days, filled from per-day counts keyed by days since 1970.
    public static func fill(
        days: Int,
        from start: Date,
        purchases: [Int64: Int],
        refunds: [Int64: Int]
    ) -> [DayFigures] {
        let first = Milliseconds.seconds(start) / secondsPerDay
        return (0..<Int64(max(0, days))).map { offset in
            let day = first + offset
            return DayFigures(
                day: Date(timeIntervalSince1970: TimeInterval(day * secondsPerDay)),
                purchases: purchases[day] ?? 0, refunds: refunds[day] ?? 0)
        }
    }
}

private struct KeyAndCurrency<Key: Hashable>: Hashable {
    var key: Key
    var currency: String
}

/// How the engines keep an admin's recovery code hashes in one text column.
public enum AdminColumns {
    /// The hashes, space-separated.
    public static func text(_ hashes: [String]) -> String { hashes.joined(separator: " ") }

    /// The hashes of a column's text.
    public static func codes(_ text: String?) -> [String] {
        (text ?? "").split(separator: " ").map(String.init)
    }
}
