#if canImport(Glibc) || canImport(Darwin)
    import NIOCore
    import NIOPosix
    import Synchronization

    /// A TCP proxy on loopback that injects the faults a database connection meets: every byte passes (on time or
    /// late), or the connections are cut, or the traffic goes into a black hole (accepted, never answered), or new
    /// connections are refused, as a test says.
    ///
    /// ```swift
    /// let proxy = try await FaultProxy(to: "127.0.0.1", port: 5432)
    /// proxy.mode = .blackHole   // requests through it now wait on nothing
    /// proxy.cutAll()            // and every connection drops
    /// proxy.mode = .pass
    /// ```
    public final class FaultProxy: Sendable {
        /// What the proxy does with traffic.
        public enum Mode: Sendable, Equatable {
            /// Forwards every byte both ways.
            case pass
            /// Forwards every byte both ways, each read `milliseconds` late (a slow or congested network).
            case delay(milliseconds: Int)
            /// Accepts connections and reads their bytes, and forwards nothing either way.
            case blackHole
            /// Refuses new connections (accepted, then closed at once); those open already go on. After
            /// ``cutAll()``, a database restarting.
            case refuse
        }

        /// The port the proxy listens on (127.0.0.1).
        public let port: Int
        private let group: MultiThreadedEventLoopGroup
        private let listener: any Channel
        private let state: Shared

        /// The mode and the open connections, shared with the channels' handlers.
        final class Shared: Sendable {
            let mutex = Mutex<(mode: Mode, channels: [ObjectIdentifier: any Channel])>((.pass, [:]))

            func withLock<T>(_ body: (inout (mode: Mode, channels: [ObjectIdentifier: any Channel])) -> T) -> T {
                mutex.withLock { body(&$0) }
            }
        }

        /// Starts a proxy to `host`:`port`.
        public init(to host: String, port target: Int) async throws {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let state = Shared()
            self.group = group
            self.state = state
            listener = try await ServerBootstrap(group: group)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { inbound in
                    let mode = state.withLock { $0.mode }
                    guard mode != .refuse else { return inbound.close() }
                    return ClientBootstrap(group: inbound.eventLoop)
                        .connect(host: host, port: target)
                        .flatMap { outbound in
                            state.withLock {
                                $0.channels[ObjectIdentifier(inbound)] = inbound
                                $0.channels[ObjectIdentifier(outbound)] = outbound
                            }
                            let forget: @Sendable (any Channel) -> Void = { channel in
                                _ = state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
                            }
                            inbound.closeFuture.whenComplete { _ in
                                forget(inbound)
                                outbound.close(promise: nil)
                            }
                            outbound.closeFuture.whenComplete { _ in
                                forget(outbound)
                                inbound.close(promise: nil)
                            }
                            return inbound.pipeline.addHandler(Forward(to: outbound, state: state)).flatMap {
                                outbound.pipeline.addHandler(Forward(to: inbound, state: state))
                            }
                        }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            port = listener.localAddress?.port ?? 0
        }

        /// What the proxy does with traffic from now on (connections open already included).
        public var mode: Mode {
            get { state.withLock { $0.mode } }
            set { state.withLock { $0.mode = newValue } }
        }

        /// Drops every connection open through the proxy.
        public func cutAll() {
            let channels = state.withLock { state in
                defer { state.channels.removeAll() }
                return Array(state.channels.values)
            }
            for channel in channels { channel.close(promise: nil) }
        }

        /// Stops the proxy.
        public func stop() async {
            cutAll()
            try? await listener.close()
            try? await group.shutdownGracefully()
        }

        /// Copies what one side reads to the other, unless the proxy is a black hole.
        private final class Forward: ChannelInboundHandler, Sendable {
            typealias InboundIn = ByteBuffer
            let peer: any Channel
            let state: Shared

            init(to peer: any Channel, state: Shared) {
                self.peer = peer
                self.state = state
            }

            func channelRead(context: ChannelHandlerContext, data: NIOAny) {
                let bytes = unwrapInboundIn(data)
                switch state.withLock({ $0.mode }) {
                case .pass, .refuse:
                    peer.writeAndFlush(bytes, promise: nil)
                case .delay(let milliseconds):
                    // Reads of one connection keep their order: each is scheduled the same time after it came.
                    let peer = peer
                    context.eventLoop.scheduleTask(in: .milliseconds(Int64(milliseconds))) {
                        peer.writeAndFlush(bytes, promise: nil)
                    }
                case .blackHole:
                    return
                }
            }
        }
    }
#endif
