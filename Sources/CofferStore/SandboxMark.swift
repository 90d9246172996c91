import CofferCore
import Foundation

/// The one rule for a Sandbox-marked customer (App Review, TestFlight, a sandbox tester, kept on a Production
/// server among real customers): their AppTransaction says Sandbox; or, without an AppTransaction, their purchases
/// are Apple's Sandbox data and none is Production's (a real customer who once ran a TestFlight build stays a real
/// customer). Every engine and the admin use cases ask it here.
public enum SandboxMark {
    /// Whether `user`, holding `receipts`, is Sandbox-marked.
    public static func holds(_ user: User, receipts: some Sequence<Receipt>) -> Bool {
        if let account = user.appleAccount { return account.environment == .sandbox }
        var sandbox = false
        for receipt in receipts {
            switch receipt.transaction.environment {
            case .production: return false
            case .sandbox: sandbox = true
            case nil: continue
            }
        }
        return sandbox
    }

    /// The same rule over the `users` row `u` and its `receipts`, for the SQL engines (the receipts' owner index
    /// serves it).
    public static let sql = """
        (u.app_transaction_environment = 'Sandbox'
            OR (u.app_transaction_environment IS NULL
                AND EXISTS (SELECT 1 FROM receipts r WHERE r.owner = u.id AND r.data_environment = 'Sandbox')
                AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.owner = u.id AND r.data_environment = 'Production')))
        """

    /// The statements that make `owner` (an SQL expression: a trigger's `NEW.owner`, say) a row of
    /// `sandbox_marked` when the rule holds for them and no row otherwise: the engines' triggers run them whenever a
    /// customer's AppTransaction or receipts change, so the Sandbox view lists its customers from that table, never
    /// by testing every customer.
    public static func refresh(owner: String) -> String {
        """
        DELETE FROM sandbox_marked WHERE owner = \(owner);
        INSERT INTO sandbox_marked (owner, environment, created_at, support_id)
        SELECT u.id, u.environment, u.created_at, u.support_id FROM users u WHERE u.id = \(owner) AND \(sql)
        ON CONFLICT (owner) DO NOTHING;
        """
    }

    /// Every Sandbox-marked customer the database holds, for the migration that makes `sandbox_marked`.
    public static let backfill = """
        INSERT INTO sandbox_marked (owner, environment, created_at, support_id)
        SELECT u.id, u.environment, u.created_at, u.support_id FROM users u WHERE \(sql)
        """

    /// Whether the receipt row `r` (a trigger's `NEW`, written, or `OLD`, gone) can change its owner's mark: the owner
    /// has no AppTransaction (only then do receipts decide), and the receipt's data goes against the mark they hold (a
    /// Sandbox receipt written for a customer not marked, a Production one for a marked customer; the other way round
    /// for one gone). Two key probes, where a refresh deletes and inserts: a real customer's delivery pays the probes
    /// alone. The refresh recomputes the rule from all the database holds, so it is right after any of a statement's
    /// rows (PostgreSQL runs row triggers once the statement has written every row).
    public static func receiptMayChange(_ r: String, written: Bool) -> String {
        let marked = "EXISTS (SELECT 1 FROM sandbox_marked WHERE owner = \(r).owner)"
        let (markingData, unmarkingData) = written ? ("Sandbox", "Production") : ("Production", "Sandbox")
        return """
            (SELECT app_transaction_environment IS NULL FROM users WHERE id = \(r).owner)
                AND ((\(r).data_environment = '\(markingData)' AND NOT \(marked))
                    OR (\(r).data_environment = '\(unmarkingData)' AND \(marked)))
            """
    }
}
