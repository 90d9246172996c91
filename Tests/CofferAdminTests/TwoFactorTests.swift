import CofferAdmin
import CofferCore
import CofferStore
import Foundation
import Testing

/// Two-factor sign-in's codes against RFC 6238's own test vectors, its window, and recovery codes.
@Suite("Two-factor codes")
struct TwoFactorTests {
    /// RFC 6238, appendix B (SHA-1): the secret is the ASCII "12345678901234567890"; six digits are the last six.
    @Test("codes are RFC 6238's", arguments: [(59, "287082"), (1_111_111_109, "081804"), (2_000_000_000, "279037")])
    func vectors(seconds: Int, code: String) {
        let secret = "12345678901234567890"
        let step = TwoFactor.step(at: Date(timeIntervalSince1970: Double(seconds)))
        #expect(TwoFactor.code(secret: secret, step: step) == code)
    }

    @Test("the key typed into an app is RFC 4648 base32 of the secret, in fours; the link carries the same")
    func typedKey() {
        let secret = "12345678901234567890"
        #expect(TwoFactor.typedKey(secret) == "GEZD GNBV GY3T QOJQ GEZD GNBV GY3T QOJQ")
        let url = TwoFactor.authenticatorURL(secret: secret, admin: "ada")
        #expect(url.hasPrefix("otpauth://totp/Coffer:ada?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"))
        #expect(url.contains("issuer=Coffer"))
        let fresh = TwoFactor.newSecret()
        #expect(fresh.count == 20 && fresh != TwoFactor.newSecret())
    }

    @Test("a code matches one step either side of now, never a used step, and only as six digits")
    func window() {
        let secret = TwoFactor.newSecret()
        let now = Date(timeIntervalSince1970: 1_764_110_401)
        let step = TwoFactor.step(at: now)
        for offset in [-1, 0, 1] as [Int64] {
            let code = TwoFactor.code(secret: secret, step: step + offset)
            #expect(TwoFactor.matchingStep(code, secret: secret, now: now, lastStep: nil) == step + offset)
            #expect(TwoFactor.matchingStep(code, secret: secret, now: now, lastStep: step + offset) == nil)
        }
        let spaced = TwoFactor.code(secret: secret, step: step).enumerated()
            .map { $0.offset == 3 ? " \($0.element)" : String($0.element) }.joined()
        #expect(TwoFactor.matchingStep(spaced, secret: secret, now: now, lastStep: nil) == step)
        for far in [-2, 2] as [Int64] {
            let code = TwoFactor.code(secret: secret, step: step + far)
            // Another step's code can collide by chance (one in a million); only assert it is not taken as `far`.
            #expect(TwoFactor.matchingStep(code, secret: secret, now: now, lastStep: nil) != step + far)
        }
        for bad in ["", "12345", "1234567", "12345a", "１２３４５６", String(repeating: "9", count: 64)] {
            #expect(TwoFactor.matchingStep(bad, secret: secret, now: now, lastStep: nil) == nil)
        }
    }

    @Test("recovery codes: ten, distinct, matched however they are typed, each used once")
    func recoveryCodes() throws {
        let codes = TwoFactor.newRecoveryCodes()
        #expect(codes.count == 10 && Set(codes).count == 10)
        #expect(codes.allSatisfy { $0.wholeMatch(of: /[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}/) != nil })
        let admin = Admin(
            name: "ada", passwordHash: "h", createdAt: Date(), twoFactorSecret: "x",
            recoveryCodeHashes: codes.map(TwoFactor.recoveryHash))
        let typed = codes[3].uppercased().replacingOccurrences(of: "-", with: " ")
        #expect(TwoFactor.isRecoveryCode(typed) && !TwoFactor.isRecoveryCode("123456"))
        let used = try #require(admin.using(recoveryCodeHash: TwoFactor.recoveryHash(typed)))
        #expect(used.recoveryCodeHashes.count == 9)
        #expect(used.using(recoveryCodeHash: TwoFactor.recoveryHash(codes[3])) == nil)
        #expect(admin.using(recoveryCodeHash: TwoFactor.recoveryHash("aaaa-bbbb-cccc")) == nil)
    }
}

/// Roles under concurrency: the last owner stays one however demotions race.
@Suite("Admin roles")
struct AdminRoleTests {
    @Test("two owners demoting each other at the same moment leave an owner", arguments: 0..<20)
    func racingDemotions(round: Int) async throws {
        let store = InMemoryStore()
        let service = AdminService(store: store, catalog: try Catalog(products: []), walletMode: .server)
        for name in ["ada", "bob"] {
            try await store.createAdmin(Admin(name: name, passwordHash: "h", createdAt: Date(timeIntervalSince1970: 0)))
        }
        await withTaskGroup(of: Void.self) { group in
            for (name, actor) in [("ada", "bob"), ("bob", "ada")] {
                group.addTask {
                    _ = try? await service.setRole(
                        environment: .sandbox, name: name, role: .support, grantLimit: 10, actor: actor)
                }
            }
        }
        let owners = try await store.admins().filter { $0.role == .owner }
        #expect(!owners.isEmpty, "round \(round)")
    }
}
