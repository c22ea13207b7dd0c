-- The application's own ("core") schema that the red-team corpus and the differential test run against.
-- Every name here is outside the agent namespace; the policy must never let a migration change any of it.
CREATE TABLE users (
  id serial PRIMARY KEY,
  email text NOT NULL UNIQUE,
  name text,
  active boolean NOT NULL DEFAULT true,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE orders (
  id bigserial PRIMARY KEY,
  user_id int NOT NULL REFERENCES users (id),
  total numeric(12, 2) NOT NULL DEFAULT 0,
  status text NOT NULL DEFAULT 'new',
  placed_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE products (
  sku text PRIMARY KEY,
  title text NOT NULL,
  price numeric(12, 2) NOT NULL
);
CREATE SEQUENCE invoice_numbers START 1000;
CREATE VIEW active_users AS SELECT id, email FROM users WHERE active;
INSERT INTO users (email, name) VALUES ('ada@example.com', 'Ada'), ('bob@example.com', 'Bob'), ('cy@example.com', NULL);
INSERT INTO orders (user_id, total, status) VALUES (1, 10.50, 'paid'), (1, 3.00, 'new'), (2, 99.99, 'shipped');
INSERT INTO products (sku, title, price) VALUES ('a-1', 'Apple', 0.50), ('b-2', 'Bread', 2.25);
SELECT nextval('invoice_numbers');
