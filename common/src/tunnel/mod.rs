//! Tunnel state (pure): peers around boringtun `Tunn`, cryptokey routing (AllowedIPs).
