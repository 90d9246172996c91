import Foundation
import Testing

@testable import CofferClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A server call's continuation is resumed exactly once, whichever of the answer and the caller's cancellation
/// comes first (a second resume would trap and stop the test process).
@Suite("Pending requests")
struct PendingRequestTests {
    static let answer: (Data, URLResponse) = (
        Data("ok".utf8),
        URLResponse(
            url: URL(string: "http://127.0.0.1/")!, mimeType: nil, expectedContentLength: 2, textEncodingName: nil)
    )

    @Test("a caller cancelled before the request begins is answered CancellationError and makes no request")
    func cancelledBeforeBegin() async {
        let pending = PendingRequest()
        pending.cancel()
        await #expect(throws: CancellationError.self) {
            _ = try await withCheckedThrowingContinuation { continuation in
                #expect(!pending.begin(continuation), "a request would be made")
            }
        }
    }

    @Test("a caller cancelled while its request runs is answered at once; the late answer is dropped")
    func cancelledWhileRunning() async {
        let pending = PendingRequest()
        await #expect(throws: CancellationError.self) {
            _ = try await withCheckedThrowingContinuation { continuation in
                #expect(pending.begin(continuation))
                pending.cancel()
                pending.finish(.success(Self.answer))
            }
        }
    }

    @Test("an answer that comes first is the caller's; a cancel after it changes nothing")
    func answeredThenCancelled() async throws {
        let pending = PendingRequest()
        let (data, _) = try await withCheckedThrowingContinuation { continuation in
            #expect(pending.begin(continuation))
            pending.finish(.success(Self.answer))
            pending.cancel()
            pending.finish(.failure(URLError(.timedOut)))
        }
        #expect(data == Data("ok".utf8))
    }
}
