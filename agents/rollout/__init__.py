"""The one episode loop, the episode record built from what reset and step return, and derived seeds."""
