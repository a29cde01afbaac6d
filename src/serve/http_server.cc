#include "serve/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace xonnx::serve {
namespace {

// Waits until `sock` is readable (or writable): true when it is, false on
// timeout or error. A hang-up counts as readable: the read then sees it.
bool Wait(int sock, short events, time_t sec, time_t usec) {
  pollfd p{sock, events, 0};
  int ms = static_cast<int>(sec * 1000 + usec / 1000);
  for (;;) {
    int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

void Address(const sockaddr_storage& a, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

// One connection's socket, read through a buffer that takes all the socket
// holds at once.
class BufferedSocketStream : public httplib::Stream {
 public:
  BufferedSocketStream(int sock, time_t read_sec, time_t read_usec, time_t write_sec, time_t write_usec)
      : sock_(sock),
        read_sec_(read_sec),
        read_usec_(read_usec),
        write_sec_(write_sec),
        write_usec_(write_usec),
        buffer_(kBufferBytes) {}

  bool buffered() const { return begin_ < end_; }

  bool is_readable() const override { return buffered() || Wait(sock_, POLLIN, read_sec_, read_usec_); }
  bool is_writable() const override { return Wait(sock_, POLLOUT, write_sec_, write_usec_); }

  ssize_t read(char* ptr, size_t size) override {
    if (!buffered()) {
      ssize_t n = Receive(MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!Wait(sock_, POLLIN, read_sec_, read_usec_)) return -1;
        n = Receive(0);
      }
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    size_t take = std::min(size, end_ - begin_);
    std::memcpy(ptr, buffer_.data() + begin_, take);
    begin_ += take;
    return static_cast<ssize_t>(take);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    for (;;) {
      ssize_t n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) Address(a, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof(a);
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) Address(a, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  static constexpr size_t kBufferBytes = size_t{256} << 10;

  ssize_t Receive(int flags) {
    for (;;) {
      ssize_t n = ::recv(sock_, buffer_.data(), buffer_.size(), flags);
      if (n < 0 && errno == EINTR) continue;
      return n;
    }
  }

  const int sock_;
  const time_t read_sec_, read_usec_, write_sec_, write_usec_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
};

}  // namespace

bool HttpServer::WaitForRequest(httplib::Stream& stream) const {
  auto& s = static_cast<BufferedSocketStream&>(stream);
  if (s.buffered()) return true;
  // In short steps, so that a stopping server lets idle connections go.
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
  while (svr_sock_ != INVALID_SOCKET) {
    if (Wait(s.socket(), POLLIN, 0, 50000)) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
  }
  return false;
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  bool ok = false;
  {
    BufferedSocketStream stream(sock, read_timeout_sec_, read_timeout_usec_, write_timeout_sec_, write_timeout_usec_);
    for (size_t left = keep_alive_max_count_; left > 0 && WaitForRequest(stream); --left) {
      bool closed = false;
      ok = process_request(stream, /*close_connection=*/left == 1, closed, nullptr);
      if (!ok || closed) break;
    }
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace xonnx::serve
